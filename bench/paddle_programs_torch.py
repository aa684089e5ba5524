"""PyTorch's step time on the models of the Paddle program fixtures (bench/paddle_programs_bench.py
runs this with a Python that has torch): the same layers, sizes, loss, optimizer and batch as
scripts/make_paddle_fixture.py (resnet_small), make_paddle_encoder_fixture.py
(encoder_classifier) and make_paddle_lr_schedule_fixture.py (lr_schedule) built in Paddle, run
eagerly with THREADS intra-op threads. Prints one line:
    ms_per_step <median of the repetitions>

    python paddle_programs_torch.py MODEL BATCH THREADS STEPS REPETITIONS
"""
import sys

import torch
from torch import nn

from step_timing import median_seconds_per_step


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
        self.c2, self.b2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
        self.short = None
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        h = torch.relu(self.b1(self.c1(x)))
        h = self.b2(self.c2(h))
        return torch.relu(h + (x if self.short is None else self.short(x)))


def resnet_small():
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, 1, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
        BasicBlock(8, 8, 1), BasicBlock(8, 16, 2), BasicBlock(16, 32, 2),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(1), nn.Linear(32, 10))
    # Paddle's Momentum with L2Decay(1e-4) folds the decay into the gradient, as weight_decay.
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    return model, optimizer, lambda b: (torch.rand(b, 3, 16, 16), torch.randint(0, 10, (b,)))


VOCAB, HIDDEN, HEADS, FFN, WORDS, CLASSES = 100, 32, 2, 64, 8, 4


class EncoderClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.words = nn.Embedding(VOCAB, HIDDEN)
        self.positions = nn.Embedding(WORDS, HIDDEN)
        self.layers = nn.ModuleList([
            nn.TransformerEncoderLayer(HIDDEN, HEADS, FFN, dropout=0.0, activation="gelu",
                                       batch_first=True) for _ in range(2)])
        self.norm = nn.LayerNorm(HIDDEN)
        self.classifier = nn.Linear(HIDDEN, CLASSES)

    def forward(self, ids):
        ones = torch.ones_like(ids)
        positions = torch.cumsum(ones, dim=-1) - ones  # computed per step, as in the program
        h = self.words(ids) + self.positions(positions)
        for layer in self.layers:
            h = layer(h)
        return self.classifier(self.norm(h)[:, 0])


def encoder_classifier():
    model = EncoderClassifier()
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.002, weight_decay=0.01)
    return model, optimizer, lambda b: (torch.randint(1, VOCAB, (b, WORDS)), torch.randint(0, CLASSES, (b,)))


def lr_schedule():
    model = nn.Sequential(nn.Linear(784, 16), nn.ReLU(), nn.Linear(16, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.2)
    return model, optimizer, lambda b: (torch.rand(b, 784), torch.randint(0, 10, (b,)))


MODELS = {"resnet_small": resnet_small, "encoder_classifier": encoder_classifier,
          "lr_schedule": lr_schedule}

WARMUP, DECAY, START_LR, PEAK_LR, END_LR = 5, 12, 0.0, 0.2, 0.02


def scheduled_lr(step):
    """The program's linear_lr_warmup(polynomial_decay): computed on the host here."""
    if step < WARMUP:
        return START_LR + (PEAK_LR - START_LR) * step / WARMUP
    t = min(step, DECAY)
    return (PEAK_LR - END_LR) * (1 - t / DECAY) + END_LR


def main():
    name, batch, threads, steps, repetitions = sys.argv[1], *map(int, sys.argv[2:6])
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model, optimizer, make_batch = MODELS[name]()
    x, y = make_batch(batch)
    loss_fn = nn.CrossEntropyLoss()
    step_count = [0]

    def step():
        if name == "lr_schedule":
            for group in optimizer.param_groups:
                group["lr"] = scheduled_lr(step_count[0])
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        if name == "encoder_classifier":
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        step_count[0] += 1
        return float(loss)  # fetched every step, as the engines fetch the loss

    print(f"ms_per_step {median_seconds_per_step(step, steps, repetitions) * 1e3:.4f}")


if __name__ == "__main__":
    main()
