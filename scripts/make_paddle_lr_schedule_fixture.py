"""Writes tests/data/paddle_lr_schedule/: a training program whose learning rate is computed
inside the program, as Paddle's static graph builds an in-graph schedule:
linear_lr_warmup(polynomial_decay(...)) from paddle.optimizer.lr. Its ops: increment of the
persistable INT64 counter @LR_DECAY_COUNTER@ (-1 after the startup program), cast,
elementwise_min, elementwise_pow, scale, less_than, two conditional_blocks (paddle.static.nn.case
lowered to paddle.static.nn.cond) with logical_not, cast BOOL -> INT32, select_input and an
assign into the persistable learning_rate_warmup, which sgd reads.

Saved as scripts/make_paddle_fixture.py saves its training fixtures (startup.pb, main.pb,
params/, the batch, Paddle's losses of 20 steps on 1 place and on Paddle's own 2-place
ParallelExecutor), plus lr_1p.npy: the learning rate each step used (fetched after it), and
lr_name.txt, the variable's name.

Run once by hand (needs `pip install paddlepaddle==2.6.2`); the outputs are committed.
"""
import os
import sys

import numpy as np
import paddle
import paddle.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
import make_paddle_fixture as fixtures  # noqa: E402  (enables static mode)

WARMUP_STEPS, DECAY_STEPS = 5, 12
START_LR, PEAK_LR, END_LR = 0.0, 0.2, 0.02


def build(main, startup):
    """An MLP (784 -> 16 relu -> 10) with cross entropy and SGD whose learning rate is the
    in-graph schedule; returns (loss, per-sample loss, learning-rate variable)."""
    with paddle.static.program_guard(main, startup):
        image = paddle.static.data("image", [-1, 784], "float32")
        label = paddle.static.data("label", [-1, 1], "int64")
        hidden = paddle.static.nn.fc(image, 16, activation="relu")
        logits = paddle.static.nn.fc(hidden, 10)
        per_sample = F.cross_entropy(logits, label, reduction="none")
        loss = paddle.mean(per_sample)
        decayed = paddle.optimizer.lr.polynomial_decay(PEAK_LR, DECAY_STEPS, END_LR, power=1.0)
        lr = paddle.optimizer.lr.linear_lr_warmup(decayed, WARMUP_STEPS, START_LR, PEAK_LR)
        # Paddle 2.x optimizers take a float or an LRScheduler; the fluid optimizers took a
        # learning-rate variable. Handing the variable over as the program's learning rate is
        # what they did (Optimizer._create_global_learning_rate keeps a Variable it finds).
        optimizer = paddle.optimizer.SGD(learning_rate=PEAK_LR)
        optimizer._learning_rate_map[main] = lr
        optimizer.minimize(loss)
    return loss, per_sample, lr


def learning_rates(main, startup, lr, feed):
    """The learning rate each of fixtures.STEPS steps used, on 1 place."""
    exe = paddle.static.Executor(paddle.CPUPlace())
    with paddle.static.scope_guard(paddle.static.Scope()):
        exe.run(startup)
        return np.array([float(exe.run(main, feed=feed, fetch_list=[lr])[0][0])
                         for _ in range(fixtures.STEPS)], dtype="float32")


def main_():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "data")
    with paddle.utils.unique_name.guard():
        main, startup = paddle.static.Program(), paddle.static.Program()
        main.random_seed = startup.random_seed = 41
        loss, per_sample, lr = build(main, startup)
        x, y = fixtures.training_batch((784,), 41)
        feed = {"image": x, "label": y}
        d = os.path.join(out_dir, "paddle_lr_schedule")
        fixtures.save_training_fixture(d, main, startup, loss, per_sample, feed)
        for b in range(1, main.num_blocks):  # write_program strips block 0's call stacks only
            for op in main.block(b).ops:
                op.desc.remove_attr("op_callstack")
        fixtures.write_program(os.path.join(d, "main.pb"), main)
        rates = learning_rates(main, startup, lr, feed)
        np.save(os.path.join(d, "lr_1p.npy"), rates)
        with open(os.path.join(d, "lr_name.txt"), "w") as f:
            f.write(lr.name + "\n")
        print("blocks:", main.num_blocks, "ops:", [op.type for op in main.global_block().ops])
        print("learning rates:", rates)


if __name__ == "__main__":
    main_()
