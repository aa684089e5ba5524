"""PyTorch DDP baseline of bench/process_training_bench.cpp: the built-in MLP (784 -> 256 relu
-> 128 relu -> 10, softmax cross-entropy, SGD lr 0.1) trained data-parallel by N processes
over gloo on 127.0.0.1, one thread each, on a fixed random batch of --batch rows per process.

Usage: python3 bench/mlp_ddp_torch.py --processes 2 --batch 256 [--steps 300]
Prints one line: `torch_ddp processes=N batch=B samples_per_s=X step_ms=Y`, where samples/s
counts every process's rows (the global batch). Every process runs the same number of steps
(10 warm-up steps, then --steps timed: a time limit could end one process a step before
another, whose last all-reduce would then wait forever). Every step ends with
`loss.item()`, as the engine's job fetches the loss every step.
"""
import os
import socket
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

from mlp_torch import mlp  # bench/, beside this script
from torch_baseline import parse_args, training_step


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank, args, port, results):
    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=args.processes)
    torch.manual_seed(7)
    model = nn.parallel.DistributedDataParallel(mlp())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(100 + rank)
    image = torch.rand(args.batch, 784) * 2 - 1
    label = torch.randint(0, 10, (args.batch,))
    step = training_step(model, optimizer, image, label)
    for _ in range(10):
        step()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    results[rank] = (args.steps, time.perf_counter() - start)
    dist.destroy_process_group()


def main():
    def extra(parser):
        parser.add_argument("--processes", type=int, default=2)
        parser.add_argument("--steps", type=int, default=300)

    args = parse_args("mlp_ddp_torch", batch=256, seconds=1.0, extra=extra)
    if args.processes < 1 or args.steps < 1:
        raise SystemExit("mlp_ddp_torch: --processes and --steps must be positive")
    results = mp.Manager().dict()
    mp.spawn(worker, args=(args, free_port(), results), nprocs=args.processes, join=True)
    steps, elapsed = results[0]
    print(f"torch_ddp processes={args.processes} batch={args.batch} "
          f"samples_per_s={steps * args.batch * args.processes / elapsed:.1f} "
          f"step_ms={elapsed * 1e3 / steps:.4f}")


if __name__ == "__main__":
    main()
