"""PyTorch eager baseline of bench/gpu_bench.cpp and bench/training_bench.cpp: the built-in MLP (graph/models/mlp.hpp
defaults: 784 -> 256 relu -> 128 relu -> 10, softmax cross-entropy, SGD lr 0.1) trained on
one fixed random batch, samples/s and step time.

Usage: python3 bench/mlp_torch.py --device cpu|cuda --batch 256 [--seconds 3] [--threads N]
Prints one line: `torch_mlp device=D threads=T batch=B samples_per_s=X step_ms=Y` (T: torch's
intra-op threads, N where given, else torch's default). Every step ends
with `loss.item()`, which waits for the device and copies the loss to the host, as the
engine's benchmark fetches the loss each step. gpu_bench runs this with the interpreter
named by PE_TORCH_PYTHON (default python3); training_bench with /usr/bin/python3 and one
thread, against one CPU place.
"""
import torch
from torch import nn

from torch_baseline import linear_layers, parse_args, timed_training  # bench/, beside this script


def mlp(width=784, hidden=(256, 128), classes=10):
    return nn.Sequential(*linear_layers(width, hidden, classes))


def main():
    args = parse_args("mlp_torch", batch=256, seconds=3.0,
                      extra=lambda parser: parser.add_argument("--threads", type=int, default=0))
    if args.threads < 0:
        raise SystemExit("mlp_torch: --threads must not be negative")
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    torch.manual_seed(7)
    model = mlp().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    image = torch.rand(args.batch, 784) * 2 - 1
    label = torch.randint(0, 10, (args.batch,))
    steps, elapsed = timed_training(model, optimizer, image, label, device, args.seconds)
    print(f"torch_mlp device={args.device} threads={torch.get_num_threads()} batch={args.batch} "
          f"samples_per_s={steps * args.batch / elapsed:.1f} step_ms={elapsed * 1e3 / steps:.4f}")


if __name__ == "__main__":
    main()
