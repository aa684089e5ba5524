#!/usr/bin/env python3
"""The MLP training loop driven from Python against pe-actor-run, same model, batch and places.

Both train the default MLP (784-256-128-10, SGD) on 8192 synthetic samples, reshuffled every
epoch, gathering each batch's rows and fetching the loss every step; samples/s is taken over
steps 2..N (step 1 is warm-up), as pe-actor-run's metrics do. Python runs two loops: numpy
batches (fancy indexing, then copied into the engine when fed) and batches gathered into
engine arrays (one copy, as the CLI's batcher makes). Rounds alternate CLI and the two Python
loops; the table shows each one's median and the ratios. Not run by the tests.

Usage: /usr/bin/python3 bench/python_bench.py [--build build] [--steps 1000] [--rounds 3]
       [--batch-size 64] [--places 1 2]
"""
import argparse
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def cli_samples_per_sec(binary, places, batch, steps):
    with tempfile.TemporaryDirectory() as tmp:
        metrics = pathlib.Path(tmp) / "metrics.json"
        subprocess.run([binary, "--model", "mlp", "--data", "synthetic", "--places", f"cpu:{places}",
                        "--batch-size", str(batch), "--steps", str(steps), "--metrics", str(metrics)],
                       check=True, stdout=subprocess.DEVNULL)
        return json.loads(metrics.read_text())["samples_per_sec"]


def python_samples_per_sec(pe_actor, places, batch, steps, in_place):
    """in_place=False: each batch gathered by numpy indexing, copied into the engine when fed;
    True: gathered straight into arrays in the engine's memory (np.take(out=)), fed without a
    copy, as pe-actor-run gathers its batches."""
    model = pe_actor.models.mlp()
    exe = pe_actor.ParallelExecutor(pe_actor.cpu_places(places), model.startup, model.main,
                                    loss_name=model.loss)
    rng = np.random.default_rng(1)
    images = rng.standard_normal((8192, 784), dtype=np.float32)
    labels = rng.integers(0, 10, (8192, 1), dtype=np.int64)
    image_rows = pe_actor.engine_array(np.empty((batch, 784), dtype=np.float32))
    label_rows = pe_actor.engine_array(np.empty((batch, 1), dtype=np.int64))
    order, position = rng.permutation(len(images)), 0
    start = None
    for step in range(steps):
        if position + batch > len(order):
            order, position = rng.permutation(len(images)), 0
        rows = order[position:position + batch]
        position += batch
        if in_place:
            np.take(images, rows, axis=0, out=image_rows, mode="clip")
            np.take(labels, rows, axis=0, out=label_rows, mode="clip")
            feed = {model.image: image_rows, model.label: label_rows}
        else:
            feed = {model.image: images[rows], model.label: labels[rows]}
        (loss,) = exe.run(feed=feed, fetch_list=[model.loss])
        float(loss[0])
        if step == 0:
            start = time.perf_counter()
    return (steps - 1) * batch / (time.perf_counter() - start)


def machine():
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                if line.startswith("model name")), platform.processor())
    return f"{os.cpu_count()} vCPUs, {cpu}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build", help="build directory (python/ and apps/)")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--places", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    build = pathlib.Path(args.build).resolve()
    sys.path.insert(0, str(build / "python"))
    import pe_actor

    binary = str(build / "apps" / "pe-actor-run")
    print(f"Machine: {machine()}; load average before the run: "
          + " ".join(f"{v:.2f}" for v in os.getloadavg()))
    print(f"{args.steps} steps, global batch {args.batch_size}, median of {args.rounds} alternated rounds\n")
    print("| places | pe-actor-run (C++) | Python, numpy batches (copied) | Python, batches in engine arrays | Python / C++ |")
    print("|---|---|---|---|---|")
    for places in args.places:
        cli, copied, in_place = [], [], []
        for _ in range(args.rounds):
            cli.append(cli_samples_per_sec(binary, places, args.batch_size, args.steps))
            copied.append(python_samples_per_sec(pe_actor, places, args.batch_size, args.steps, False))
            in_place.append(python_samples_per_sec(pe_actor, places, args.batch_size, args.steps, True))
        c, p, q = (statistics.median(v) for v in (cli, copied, in_place))
        print(f"| {places} | {c:.0f} samples/s | {p:.0f} samples/s | {q:.0f} samples/s "
              f"| {p / c:.3f}x, {q / c:.3f}x |")
    print("\nload average after the run: " + " ".join(f"{v:.2f}" for v in os.getloadavg()))


if __name__ == "__main__":
    main()
