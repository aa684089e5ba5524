"""What the PyTorch baselines bench/cnn_torch.py and bench/mlp_torch.py share: their command
line, the device, the fully connected stack both models end with, the training step, and the
timed loop.

Not run on its own: each script imports it from its own folder (Python puts a script's folder
first on sys.path), so both run as `python3 bench/<script>.py ...` from any directory.
"""
import argparse
import sys
import time

import torch
from torch import nn


def parse_args(script, batch, seconds, extra=lambda parser: None):
    """The baselines' command line (--device cpu|cuda, --batch, --seconds and what `extra` adds),
    checked: a non-positive size, or cuda where torch sees no CUDA device, ends the script
    with a message naming it."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--batch", type=int, default=batch)
    parser.add_argument("--seconds", type=float, default=seconds)
    extra(parser)
    args = parser.parse_args()
    if args.batch <= 0 or args.seconds <= 0:
        sys.exit(f"{script}: --batch and --seconds must be positive")
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit(f"{script}: torch {torch.__version__} sees no CUDA device")
    return args


def timed_training(model, optimizer, image, label, device, seconds):
    """Trains on the fixed batch for `seconds` after 10 warm-up steps (on CUDA the context,
    cuBLAS/cuDNN handles and algorithm choice, the caching allocator); returns (steps, elapsed)."""
    step = training_step(model, optimizer, image.to(device), label.to(device))
    synchronize = torch.cuda.synchronize if device.type == "cuda" else lambda: None
    return time_steps(step, warmup=10, seconds=seconds, synchronize=synchronize)


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
