"""A learning-rate schedule of Paddle's static graph, run by pe_actor as Paddle runs it.

Paddle's optimizer.minimize, given an LRScheduler, sets program.lr_scheduler; Executor.run then
writes lr_scheduler() to the learning-rate variable before every run, and the training loop
steps the scheduler. pe_actor.ParallelExecutor takes the same lr_scheduler from the Paddle
Program (or from its lr_scheduler property) and does the same, so the loop is Paddle's.

This trains a small MLP with PiecewiseDecay on Paddle's Executor and on pe_actor (2 places,
from Paddle's initial parameters) and prints both losses per step. Needs paddlepaddle 2.6 and
the pe_actor module (pip install . , or PYTHONPATH=build/python):

    python examples/lr_schedule.py
"""
import numpy as np
import paddle

import pe_actor

STEPS = 12


def build():
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 5
    with paddle.static.program_guard(main, startup):
        image = paddle.static.data("image", [-1, 16], "float32")
        label = paddle.static.data("label", [-1, 1], "int64")
        hidden = paddle.static.nn.fc(image, 32, activation="relu")
        logits = paddle.static.nn.fc(hidden, 4)
        loss = paddle.mean(paddle.nn.functional.softmax_with_cross_entropy(logits, label))
        schedule = paddle.optimizer.lr.PiecewiseDecay(boundaries=[4, 8], values=[0.5, 0.1, 0.02])
        paddle.optimizer.SGD(learning_rate=schedule).minimize(loss)
    return main, startup, loss, schedule


def main():
    paddle.enable_static()
    program, startup, loss, schedule = build()
    rng = np.random.default_rng(0)
    feed = {"image": rng.standard_normal((32, 16)).astype("float32"),
            "label": rng.integers(0, 4, (32, 1)).astype("int64")}

    scope = paddle.static.Scope()
    exe = paddle.static.Executor(paddle.CPUPlace())
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        persistables = [v.name for v in program.list_vars() if v.persistable and v.name not in ("feed", "fetch")]
        initial = {name: np.array(scope.find_var(name).get_tensor()) for name in persistables}
        paddle_losses = []
        for _ in range(STEPS):
            paddle_losses.append(float(exe.run(program, feed=feed, fetch_list=[loss])[0]))
            schedule.step()

    schedule.last_epoch = -1  # the same schedule again, from its start, for pe_actor
    schedule.step()
    ours = pe_actor.ParallelExecutor(pe_actor.cpu_places(2), startup, program, loss_name=loss.name)
    assert ours.lr_scheduler is schedule  # taken from program.lr_scheduler
    for name, value in initial.items():
        ours.set_var(name, value)
    print(f"rate var {schedule._var_name}; step, rate, Paddle's loss, pe_actor's loss")
    for step in range(STEPS):
        rate = schedule()
        (value,) = ours.run(feed=feed, fetch_list=[loss.name])
        schedule.step()
        print(f"{step + 1:4d} {rate:6.3f} {paddle_losses[step]:.6f} {float(np.ravel(value)[0]):.6f}")


if __name__ == "__main__":
    main()
