"""PyTorch eager baseline of bench/gpu_bench.cpp: the built-in MLP (graph/models/mlp.hpp
defaults: 784 -> 256 relu -> 128 relu -> 10, softmax cross-entropy, SGD lr 0.1) trained on
one fixed random batch, samples/s and step time.

Usage: python3 bench/mlp_torch.py --device cpu|cuda --batch 256 [--seconds 3]
Prints one line: `torch_mlp device=D batch=B samples_per_s=X step_ms=Y`. Every step ends
with `loss.item()`, which waits for the device and copies the loss to the host, as the
engine's benchmark fetches the loss each step. gpu_bench runs this with the interpreter
named by PE_TORCH_PYTHON (default python3).
"""
import argparse
import sys

import torch
from torch import nn

from torch_baseline import linear_layers, time_steps, training_step  # bench/, beside this script


def mlp(width=784, hidden=(256, 128), classes=10):
    return nn.Sequential(*linear_layers(width, hidden, classes))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    if args.batch <= 0 or args.seconds <= 0:
        sys.exit("mlp_torch: --batch and --seconds must be positive")
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit(f"mlp_torch: torch {torch.__version__} sees no CUDA device")
    device = torch.device(args.device)
    torch.manual_seed(7)
    model = mlp().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    image = (torch.rand(args.batch, 784) * 2 - 1).to(device)
    label = torch.randint(0, 10, (args.batch,)).to(device)
    step = training_step(model, optimizer, image, label)
    # 10 warm-up steps: CUDA context, cuBLAS handles, the caching allocator.
    synchronize = torch.cuda.synchronize if device.type == "cuda" else lambda: None
    steps, elapsed = time_steps(step, warmup=10, seconds=args.seconds, synchronize=synchronize)
    print(f"torch_mlp device={args.device} batch={args.batch} "
          f"samples_per_s={steps * args.batch / elapsed:.1f} step_ms={elapsed * 1e3 / steps:.4f}")


if __name__ == "__main__":
    main()
