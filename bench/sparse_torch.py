"""The PyTorch baseline of bench/sparse_bench.cpp: the same bag-of-words model (nn.Embedding of
1,000,000 x 64 with sparse=True, mean over 20 words, Linear to 2 classes, cross entropy, SGD
lr 0.5), 256 samples per process, trained by DistributedDataParallel over gloo on 2 processes
of one thread each (DDP all-gathers the sparse gradients). Prints, from rank 0,
`samples_per_s=<global samples per second over the timed steps> peak_rss_mb=<largest process>`.

Usage: /usr/bin/python3 bench/sparse_torch.py [--steps N] [--port P]
(torch_baseline.py, beside it, brings the training step.)
"""
import argparse
import os
import resource
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

from torch_baseline import training_step

ROWS, WIDTH, WORDS, BATCH = 1_000_000, 64, 20, 256


class Bag(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(ROWS, WIDTH, sparse=True)
        self.fc = nn.Linear(WIDTH, 2)

    def forward(self, ids):
        return self.fc(self.embedding(ids).mean(dim=1))


def worker(rank, world, steps, port, out):
    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(17)
    model = nn.parallel.DistributedDataParallel(Bag())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    generator = torch.Generator().manual_seed(7 + rank)
    ids = torch.randint(0, ROWS, (BATCH, WORDS), generator=generator)
    label = torch.randint(0, 2, (BATCH,), generator=generator)
    step = training_step(model, optimizer, ids, label)
    for _ in range(2):
        step()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    elapsed = time.perf_counter() - start
    rss = torch.tensor([resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0])
    dist.all_reduce(rss, op=dist.ReduceOp.MAX)
    if rank == 0:
        out.put(f"samples_per_s={world * BATCH * steps / elapsed:.1f} peak_rss_mb={rss.item():.0f}")
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--port", type=int, default=29500 + os.getpid() % 10000)
    args = parser.parse_args()
    context = mp.get_context("spawn")
    out = context.Queue()
    mp.start_processes(worker, args=(2, args.steps, args.port, out), nprocs=2, join=True, start_method="spawn")
    print(out.get())


if __name__ == "__main__":
    main()
