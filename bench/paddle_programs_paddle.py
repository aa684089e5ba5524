"""Paddle 2.6's own step time on a training program it saved (bench/paddle_programs_bench.py
runs this with a Python that has paddlepaddle): the fixture's main.pb and startup.pb, its feeds
(<name>.npy), its loss (loss_name.txt), on 1 CPU place (paddle.static.Executor) or 2
(the ParallelExecutor, built as Paddle 2.4's with_data_parallel did; Paddle 2.6's
CompiledProgram no longer gives it the loss or several places). Prints one line:
    ms_per_step <median of the repetitions>

    python paddle_programs_paddle.py DIR PLACES STEPS REPETITIONS
"""
import os
import statistics
import sys
import time

import numpy as np
import paddle
from paddle.base import core

paddle.enable_static()


def load(d):
    programs = []
    for part in ("main", "startup"):
        with open(os.path.join(d, part + ".pb"), "rb") as f:
            programs.append(paddle.static.Program.parse_from_string(f.read()))
    main, startup = programs
    feeds = {}
    written = {v for op in main.global_block().ops for v in op.output_arg_names}
    for name in sorted(os.listdir(d)):
        stem = name[:-len(".npy")]
        # A feed is a .npy named as a variable of the program that no op writes.
        if name.endswith(".npy") and main.global_block().has_var(stem) and stem not in written:
            feeds[stem] = np.load(os.path.join(d, name))
    with open(os.path.join(d, "loss_name.txt")) as f:
        loss = f.read().strip()
    return main, startup, feeds, loss


def one_place(main, startup, feeds, loss, steps, repetitions):
    exe = paddle.static.Executor(paddle.CPUPlace())
    scope = paddle.static.Scope()
    times = []
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        for _ in range(3):  # warm-up: kernels chosen, memory allocated
            exe.run(main, feed=feeds, fetch_list=[loss])
        for _ in range(repetitions):
            start = time.perf_counter()
            for _ in range(steps):
                exe.run(main, feed=feeds, fetch_list=[loss])
            times.append((time.perf_counter() - start) / steps)
    return statistics.median(times)


def places(main, startup, feeds, loss, count, steps, repetitions):
    scope = paddle.static.Scope()
    exe = paddle.static.Executor(paddle.CPUPlace())
    with paddle.static.scope_guard(scope):
        exe.run(startup)
    make = core.ParallelExecutor
    core.ParallelExecutor = lambda p, v, _, *rest: make(p * count, v, loss, *rest)
    try:
        strategy = paddle.static.BuildStrategy()
        strategy.fuse_all_reduce_ops = False  # needs graph attributes 2.6 no longer sets
        compiled = paddle.static.CompiledProgram(main, build_strategy=strategy)
        compiled._compile(scope, paddle.CPUPlace())
    finally:
        core.ParallelExecutor = make
    executor = compiled._executor

    def step():
        tensors = {}
        for name, value in feeds.items():
            tensors[name] = core.LoDTensor()
            tensors[name].set(value, paddle.CPUPlace())
        executor.feed_and_split_tensor_into_local_scopes(tensors)
        executor.run([loss], False)

    for _ in range(3):
        step()
    times = []
    for _ in range(repetitions):
        start = time.perf_counter()
        for _ in range(steps):
            step()
        times.append((time.perf_counter() - start) / steps)
    return statistics.median(times)


def main():
    d, count, steps, repetitions = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    os.environ.setdefault("CPU_NUM", str(count))
    paddle.set_flags({"FLAGS_use_mkldnn": False})
    main_program, startup, feeds, loss = load(d)
    if count == 1:
        seconds = one_place(main_program, startup, feeds, loss, steps, repetitions)
    else:
        seconds = places(main_program, startup, feeds, loss, count, steps, repetitions)
    print(f"ms_per_step {seconds * 1e3:.4f}")


if __name__ == "__main__":
    main()
