"""PyTorch baseline of bench/cnn_bench.cpp: the built-in CNN (graph/models/cnn.hpp defaults:
2 x [conv 5x5 same, no bias -> batch_norm -> relu -> max pool 2], fc 120 -> 84 -> 10,
softmax cross-entropy, momentum 0.9) trained on one fixed random batch, samples/s and step
time. Also the baseline of bench/gpu_bench.cpp's CNN rows (--device cuda).

Usage: python3 bench/cnn_torch.py [--device cpu|cuda] --batch 64 --threads 1 [--seconds 5]
Prints one line: `torch_cnn device=D threads=T batch=B samples_per_s=X step_ms=Y`. Every
step ends with `loss.item()`, which waits for the device. Debian's python3-torch lives under
/usr/bin/python3 (scripts/bench_cnn.sh picks it).
"""
import argparse
import sys

import torch
from torch import nn

from torch_baseline import linear_layers, time_steps, training_step  # bench/, beside this script


def lenet(channels=(32, 64), fc=(120, 84), classes=10, side=28):
    layers, c = [], 1
    for out in channels:
        layers += [nn.Conv2d(c, out, 5, padding=2, bias=False), nn.BatchNorm2d(out, eps=1e-5, momentum=0.1),
                   nn.ReLU(), nn.MaxPool2d(2, 2)]
        c, side = out, side // 2
    layers.append(nn.Flatten())
    layers += linear_layers(c * side * side, fc, classes)
    return nn.Sequential(*layers)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    if args.batch <= 0 or args.seconds <= 0:
        sys.exit("cnn_torch: --batch and --seconds must be positive")
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit(f"cnn_torch: torch {torch.__version__} sees no CUDA device")
    device = torch.device(args.device)
    torch.set_num_threads(args.threads)
    torch.manual_seed(7)
    model = lenet().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    image = (torch.rand(args.batch, 1, 28, 28) * 2 - 1).to(device)
    label = torch.randint(0, 10, (args.batch,)).to(device)
    step = training_step(model, optimizer, image, label)
    # Warm-up: on CUDA the context, cuDNN's algorithm choice and the caching allocator.
    synchronize = torch.cuda.synchronize if device.type == "cuda" else lambda: None
    steps, elapsed = time_steps(step, warmup=10 if device.type == "cuda" else 5,
                                seconds=args.seconds, synchronize=synchronize)
    print(f"torch_cnn device={args.device} threads={args.threads} batch={args.batch} "
          f"samples_per_s={steps * args.batch / elapsed:.1f} step_ms={elapsed * 1e3 / steps:.4f}")


if __name__ == "__main__":
    main()
