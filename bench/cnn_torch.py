"""PyTorch baseline of bench/cnn_bench.cpp: the built-in CNN (graph/models/cnn.hpp defaults:
2 x [conv 5x5 same, no bias -> batch_norm -> relu -> max pool 2], fc 120 -> 84 -> 10,
softmax cross-entropy, momentum 0.9) trained on one fixed random batch, samples/s and step
time. Also the baseline of bench/gpu_bench.cpp's CNN rows (--device cuda).

Usage: python3 bench/cnn_torch.py [--device cpu|cuda] --batch 64 --threads 1 [--seconds 5] [--no-tf32]
--no-tf32 turns off PyTorch's default TF32 math in cuDNN convolutions
(torch.backends.cudnn.allow_tf32), so that they compute in FP32 as the engine's do.
Prints one line: `torch_cnn device=D threads=T batch=B samples_per_s=X step_ms=Y`. Every
step ends with `loss.item()`, which waits for the device. Debian's python3-torch lives under
/usr/bin/python3 (scripts/bench_cnn.sh picks it).
"""
import torch
from torch import nn

from torch_baseline import linear_layers, parse_args, timed_training  # bench/, beside this script


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
    def extra(parser):
        parser.add_argument("--threads", type=int, default=1)
        parser.add_argument("--no-tf32", action="store_true")
    args = parse_args("cnn_torch", batch=64, seconds=5.0, extra=extra)
    if args.no_tf32:
        torch.backends.cudnn.allow_tf32 = False
    device = torch.device(args.device)
    torch.set_num_threads(args.threads)
    torch.manual_seed(7)
    model = lenet().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    image = torch.rand(args.batch, 1, 28, 28) * 2 - 1
    label = torch.randint(0, 10, (args.batch,))
    steps, elapsed = timed_training(model, optimizer, image, label, device, args.seconds)
    print(f"torch_cnn device={args.device} threads={args.threads} batch={args.batch} "
          f"tf32={'off' if args.no_tf32 else 'default'} "
          f"samples_per_s={steps * args.batch / elapsed:.1f} step_ms={elapsed * 1e3 / steps:.4f}")


if __name__ == "__main__":
    main()
