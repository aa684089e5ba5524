"""What the PyTorch baselines bench/cnn_torch.py and bench/mlp_torch.py share: the fully
connected stack both models end with, the training step, and the timed loop.

Not run on its own: each script imports it from its own folder (Python puts a script's folder
first on sys.path), so both run as `python3 bench/<script>.py ...` from any directory.
"""
import time

from torch import nn


def linear_layers(width, hidden, classes):
    """[Linear(width, hidden[0]), ReLU, ..., Linear(hidden[-1], classes)], built in that order
    (so a seeded run draws the same initial weights), as the engine's fc stacks."""
    layers = []
    for out in hidden:
        layers += [nn.Linear(width, out), nn.ReLU()]
        width = out
    layers.append(nn.Linear(width, classes))
    return layers


def training_step(model, optimizer, image, label):
    """A function running one step on the fixed batch: forward, cross-entropy, backward,
    optimizer step; it returns `loss.item()`, which waits for the device and copies the loss
    to the host, as the engine's benchmarks fetch the loss every step."""
    loss_fn = nn.CrossEntropyLoss()

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(image), label)
        loss.backward()
        optimizer.step()
        return loss.item()

    return step


def time_steps(step, warmup, seconds, synchronize=lambda: None):
    """Runs `warmup` untimed steps, then steps for `seconds`; returns (steps, elapsed seconds).
    `synchronize` runs after the warm-up and after the last step (CUDA: wait for the device)."""
    for _ in range(warmup):
        step()
    synchronize()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        step()
        steps += 1
    synchronize()
    return steps, time.perf_counter() - start
