"""Learning-rate schedules as Paddle's static graph runs them (issue 26): Paddle's Executor.run
writes program.lr_scheduler() to the variable lr_scheduler._var_name before every run, and the
user steps the scheduler. pe_actor.ParallelExecutor does the same, taking the scheduler from a
Paddle Program (here a stand-in with Paddle's attributes: no paddle import) or from its
lr_scheduler property."""
import numpy as np
import pytest

import pe_actor

RATE = "learning_rate_0"  # the built-in models' SGD rate, FP32 [1]
WEIGHT = "fc_0.w_0"
SCHEDULE = [0.1, 0.0, 0.3, 0.05, 0.0, 0.2]


class Schedule:
    """Paddle's LRScheduler protocol: calling it gives the rate now; step() moves on;
    _var_name is set by the optimizer's minimize in static mode."""

    def __init__(self, rates, var_name=RATE):
        self.rates, self.step_num, self._var_name = rates, 0, var_name

    def __call__(self):
        return self.rates[self.step_num]

    def step(self):
        self.step_num += 1


class PaddleProgram:
    """What pe_actor reads of a Paddle Program: desc.serialize_to_string() and lr_scheduler."""

    class _Desc:
        def __init__(self, data):
            self.data = data

        def serialize_to_string(self):
            return self.data

    def __init__(self, program, lr_scheduler):
        self.desc = self._Desc(program.serialize())
        self.lr_scheduler = lr_scheduler


def weights_after_each_step(exe, feed, schedule=None, by_hand=None):
    """The weight after each step of SCHEDULE, with `schedule` stepped after each run or each
    rate written by hand (set_var) before it."""
    out = []
    for rate in SCHEDULE:
        if by_hand:
            exe.set_var(RATE, np.array([rate], dtype=np.float32))
        exe.run(feed=feed, fetch_list=[exe.loss_name])
        assert exe.get_var(RATE)[0] == np.float32(rate)
        out.append(exe.get_var(WEIGHT))
        if schedule:
            schedule.step()
    return out


def test_a_paddle_programs_lr_scheduler_sets_the_rate_before_every_run(small_mlp):
    model, feed = small_mlp
    schedule = Schedule(SCHEDULE)
    scheduled = pe_actor.ParallelExecutor(pe_actor.cpu_places(2), model.startup,
                                          PaddleProgram(model.main, schedule), loss_name=model.loss)
    assert scheduled.lr_scheduler is schedule
    start = scheduled.get_var(WEIGHT)
    got = weights_after_each_step(scheduled, feed, schedule=schedule)

    by_hand = pe_actor.ParallelExecutor(pe_actor.cpu_places(2), model.startup, model.main,
                                        loss_name=model.loss)
    assert by_hand.lr_scheduler is None
    np.testing.assert_array_equal(by_hand.get_var(WEIGHT), start)
    expected = weights_after_each_step(by_hand, feed, by_hand=True)
    for step, (g, e) in enumerate(zip(got, expected)):
        np.testing.assert_array_equal(g, e, err_msg=f"step {step + 1}")
    # A step at rate 0 leaves the weights as they were: the rate was written before it ran.
    np.testing.assert_array_equal(got[1], got[0])
    np.testing.assert_array_equal(got[4], got[3])
    assert not np.array_equal(got[2], got[1])


def test_the_lr_scheduler_property_sets_and_removes_a_schedule(small_mlp):
    model, feed = small_mlp
    exe = pe_actor.ParallelExecutor(pe_actor.cpu_places(1), model.startup, model.main,
                                    loss_name=model.loss)
    schedule = Schedule([0.0, 0.25])
    exe.lr_scheduler = schedule
    before = exe.get_var(WEIGHT)
    exe.run(feed=feed, fetch_list=[model.loss])
    np.testing.assert_array_equal(exe.get_var(WEIGHT), before)  # rate 0.0
    schedule.step()
    exe.run(feed=feed, fetch_list=[model.loss])
    assert exe.get_var(RATE)[0] == np.float32(0.25)
    exe.lr_scheduler = None
    exe.set_var(RATE, np.array([0.5], dtype=np.float32))
    exe.run(feed=feed, fetch_list=[model.loss])
    assert exe.get_var(RATE)[0] == np.float32(0.5)  # nothing overwrites it any more


def test_a_scheduler_for_a_variable_the_program_lacks_is_refused(small_mlp):
    model, _ = small_mlp
    exe = pe_actor.ParallelExecutor(pe_actor.cpu_places(1), model.startup, model.main)
    with pytest.raises(ValueError, match="'nope' is not a one-element FP32 persistable"):
        exe.lr_scheduler = Schedule([0.1], var_name="nope")
    with pytest.raises(ValueError, match="'fc_0.w_0' is not a one-element FP32 persistable"):
        exe.lr_scheduler = Schedule([0.1], var_name=WEIGHT)
    with pytest.raises(TypeError, match="LRScheduler protocol"):
        exe.lr_scheduler = 0.1
    # A Paddle test program (no such variable) runs without writing a rate, as in Paddle.
    test = pe_actor.ParallelExecutor(main_program=PaddleProgram(model.test, Schedule([0.1], "absent")),
                                     share_vars_from=exe)
    assert test.lr_scheduler is None
