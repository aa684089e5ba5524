"""Paddle 2.6's own step time on a training program it saved (bench/paddle_programs_bench.py
runs this with a Python that has paddlepaddle): the fixture's main.pb and startup.pb, its feeds
(<name>.npy), its loss (loss_name.txt), on 1 CPU place (paddle.static.Executor) or 2
(the ParallelExecutor, built as scripts/make_paddle_fixture.py builds it for the fixtures'
2-place losses). Prints one line:
    ms_per_step <median of the repetitions>

    python paddle_programs_paddle.py DIR PLACES STEPS REPETITIONS
"""
import os
import sys

import numpy as np
import paddle
from paddle.base import core

from step_timing import median_seconds_per_step

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))
from make_paddle_fixture import parallel_program  # noqa: E402  (enables static mode)


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
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        return median_seconds_per_step(lambda: exe.run(main, feed=feeds, fetch_list=[loss]),
                                       steps, repetitions)


def places(main, startup, feeds, loss, count, steps, repetitions):
    scope = paddle.static.Scope()
    exe = paddle.static.Executor(paddle.CPUPlace())
    with paddle.static.scope_guard(scope):
        exe.run(startup)
    compiled = parallel_program(main, loss, count, scope)
    executor = compiled._executor

    def step():
        tensors = {}
        for name, value in feeds.items():
            tensors[name] = core.LoDTensor()
            tensors[name].set(value, paddle.CPUPlace())
        executor.feed_and_split_tensor_into_local_scopes(tensors)
        executor.run([loss], False)

    return median_seconds_per_step(step, steps, repetitions)


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
