"""ParallelExecutor's Paddle-shaped API: share_vars_from, strategies, errors, parameter files,
traces."""
import json

import numpy as np
import pytest

import pe_actor
from conftest import EMPTY_STARTUP, assign_program, op, tensor_var, text_program


def train(exe, model, feed, steps):
    return [float(exe.run(feed=feed, fetch_list=[model.loss])[0][0]) for _ in range(steps)]


def switched_on(strategy, field, value=True, default=False):
    """`strategy` (a fresh one) with `field` set to `value`, after checking that it is
    `default` by default and that repr shows the value."""
    assert getattr(strategy, field) is default
    setattr(strategy, field, value)
    assert f"{field}={value}" in repr(strategy)
    return strategy


def test_a_test_executor_sharing_variables_sees_the_trained_parameters(small_mlp):
    model, feed = small_mlp
    train_exe = pe_actor.ParallelExecutor(pe_actor.cpu_places(2), model.startup, model.main,
                                          loss_name=model.loss)
    test_exe = pe_actor.ParallelExecutor(main_program=model.test, share_vars_from=train_exe)
    assert test_exe.num_places == 2
    (before,) = test_exe.run(feed=feed, fetch_list=[model.loss])
    losses = train(train_exe, model, feed, 20)
    (after,) = test_exe.run(feed=feed, fetch_list=[model.loss])
    # The test program's loss is the loss of the training step that would come next.
    assert after[0] < before[0]
    (next_train,) = train_exe.run(feed=feed, fetch_list=[model.loss])
    np.testing.assert_allclose(after, next_train, rtol=1e-6)
    assert losses[-1] < losses[0]
    for p in range(2):
        np.testing.assert_array_equal(test_exe.get_var("fc_0.w_0", p), train_exe.get_var("fc_0.w_0", p))


def test_share_vars_from_takes_places_startup_and_threads_from_the_shared_executor(small_mlp):
    model, _ = small_mlp
    train_exe = pe_actor.ParallelExecutor(pe_actor.cpu_places(2), model.startup, model.main)
    with pytest.raises(ValueError, match="startup program ran in the executor"):
        pe_actor.ParallelExecutor(None, model.startup, model.test, share_vars_from=train_exe)
    for places in (pe_actor.cpu_places(3), ["cpu:1", "cpu:0"]):
        with pytest.raises(ValueError, match=r"places must be those of the shared executor \(cpu:0, cpu:1\)"):
            pe_actor.ParallelExecutor(places, None, model.test, share_vars_from=train_exe)
    threads = pe_actor.ExecutionStrategy()
    threads.num_threads = 2
    with pytest.raises(ValueError, match="exec_strategy must be the shared executor's"):
        pe_actor.ParallelExecutor(main_program=model.test, exec_strategy=threads,
                                  share_vars_from=train_exe)
    same = pe_actor.ParallelExecutor(pe_actor.cpu_places(2), None, model.test,
                                     exec_strategy=pe_actor.ExecutionStrategy(),
                                     share_vars_from=train_exe)
    assert same.num_threads == 1


def test_a_bad_feed_raises_the_engines_message_and_the_executor_stays_usable(small_mlp):
    model, feed = small_mlp
    exe = pe_actor.ParallelExecutor(pe_actor.cpu_places(2), model.startup, model.main)
    with pytest.raises(pe_actor.Error, match="feed 'image' has dtype FP64 but the program declares FP32"):
        exe.run(feed={**feed, model.image: feed[model.image].astype(np.float64)}, fetch_list=[model.loss])
    with pytest.raises(pe_actor.Error, match="'label'"):
        exe.run(feed={model.image: feed[model.image]}, fetch_list=[model.loss])
    with pytest.raises(pe_actor.Error, match="image"):
        exe.run(feed={**feed, model.image: feed[model.image][:, :5]}, fetch_list=[model.loss])
    with pytest.raises(pe_actor.Error, match="nonexistent"):
        exe.run(feed=feed, fetch_list=["nonexistent"])
    assert isinstance(pe_actor.Error("x"), RuntimeError)
    (loss,) = exe.run(feed=feed, fetch_list=[model.loss])
    assert np.isfinite(loss).all()


def test_constructor_arguments_are_checked(small_mlp):
    model, _ = small_mlp
    with pytest.raises(ValueError, match="loss_name 'fc_0.tmp_0' is not the program's loss"):
        pe_actor.ParallelExecutor(pe_actor.cpu_places(1), model.startup, model.main,
                                  loss_name="fc_0.tmp_0")
    with pytest.raises(ValueError, match="startup_program is required"):
        pe_actor.ParallelExecutor(pe_actor.cpu_places(1), None, model.main)
    with pytest.raises(TypeError, match="main_program: expected a pe_actor.Program"):
        pe_actor.ParallelExecutor(pe_actor.cpu_places(1), model.startup, 42)
    with pytest.raises(ValueError, match="cpu:N or gpu:N, got 'tpu:0'"):
        pe_actor.ParallelExecutor(["tpu:0"], model.startup, model.main)
    with pytest.raises(pe_actor.Error, match="no such file|cannot open program file"):
        pe_actor.ParallelExecutor(pe_actor.cpu_places(1), model.startup, "/nonexistent/main.pb")


class PaddleVariable:
    """What Paddle's Variable looks like to run(): a .name."""
    def __init__(self, name):
        self.name = name


def test_loss_name_and_fetch_list_take_paddle_variables(small_mlp):
    model, feed = small_mlp
    exe = pe_actor.ParallelExecutor(pe_actor.cpu_places(1), model.startup, model.main,
                                    loss_name=PaddleVariable(model.loss))
    assert exe.loss_name == model.loss
    (loss, acc) = exe.run(feed=feed, fetch_list=[PaddleVariable(model.loss), model.accuracy])
    assert loss.shape == (1,) and 0 <= acc[0] <= 1


def losses_with(model, feed, build=None, exec_=None):
    exe = pe_actor.ParallelExecutor(pe_actor.cpu_places(2), model.startup, model.main,
                                    build_strategy=build, exec_strategy=exec_)
    return train(exe, model, feed, 5)


def test_strategies_change_how_not_what_is_computed(small_mlp):
    model, feed = small_mlp
    baseline = losses_with(model, feed)
    reduce = pe_actor.BuildStrategy()
    reduce.reduce_strategy = pe_actor.BuildStrategy.ReduceStrategy.Reduce
    fused = pe_actor.BuildStrategy()
    fused.fuse_all_reduce_ops = True
    fused.fuse_all_reduce_mb = 0.001
    per_gradient = pe_actor.BuildStrategy()
    assert per_gradient.all_reduce_groups == pe_actor.BuildStrategy.AllReduceGroups.Layer
    per_gradient.all_reduce_groups = pe_actor.BuildStrategy.AllReduceGroups.Gradient
    threads = pe_actor.ExecutionStrategy()
    threads.num_threads = 2
    threads.sync = pe_actor.ExecutionStrategy.SyncMode.Wait
    for build, exec_ in ((reduce, None), (fused, None), (per_gradient, None), (None, threads)):
        np.testing.assert_allclose(losses_with(model, feed, build, exec_), baseline, rtol=1e-6)

    one = pe_actor.BuildStrategy()
    one.gradient_scale_strategy = pe_actor.BuildStrategy.GradientScaleStrategy.One
    scaled = losses_with(model, feed, one)
    assert scaled[0] == pytest.approx(baseline[0]) and scaled[1] != pytest.approx(baseline[1])

    customized = pe_actor.BuildStrategy()
    customized.gradient_scale_strategy = pe_actor.BuildStrategy.GradientScaleStrategy.Customized
    exe = pe_actor.ParallelExecutor(pe_actor.cpu_places(2), model.startup, model.main,
                                    build_strategy=customized)
    with pytest.raises(pe_actor.Error, match="missing feed 'mean_0.tmp_0@GRAD'"):
        exe.run(feed=feed, fetch_list=[model.loss])

    bad = pe_actor.BuildStrategy()
    bad.fuse_all_reduce_ops = True
    bad.fuse_all_reduce_mb = 0
    with pytest.raises(ValueError, match="fuse_all_reduce_mb"):
        losses_with(model, feed, bad)


def test_check_nan_inf_names_the_op_and_the_tensor_limit_refuses_large_programs(small_mlp):
    model, feed = small_mlp
    checked = pe_actor.ExecutionStrategy()
    checked.check_nan_inf = True
    exe = pe_actor.ParallelExecutor(pe_actor.cpu_places(2), model.startup, model.main, exec_strategy=checked)
    exe.run(feed=feed, fetch_list=[model.loss])
    poisoned = {**feed, model.image: np.full_like(feed[model.image], np.inf)}
    with pytest.raises(pe_actor.Error, match=r"op #\d+ \(mul\) on cpu:[01]: output variable '[^']+' .* holds (-?nan|-?inf)"):
        exe.run(feed=poisoned, fetch_list=[model.loss])
    # Unchecked, the step runs: relu maps the NaN of inf * w to 0 (as Paddle's does), so the
    # poisoned batch goes unnoticed, which is what check_nan_inf is for.
    unchecked = pe_actor.ParallelExecutor(pe_actor.cpu_places(2), model.startup, model.main)
    (loss,) = unchecked.run(feed=poisoned, fetch_list=[model.loss])
    assert loss.shape == (1,)

    small = pe_actor.BuildStrategy()
    small.max_tensor_bytes = 16
    with pytest.raises(pe_actor.Error, match="16 bytes"):
        pe_actor.ParallelExecutor(pe_actor.cpu_places(2), model.startup, model.main, build_strategy=small)
    small.max_tensor_bytes = 0
    with pytest.raises(ValueError, match="max_tensor_bytes must be positive"):
        pe_actor.ParallelExecutor(pe_actor.cpu_places(2), model.startup, model.main, build_strategy=small)
    assert "check_nan_inf=True" in repr(checked)


def test_a_failure_after_the_fetches_reaches_the_caller(small_mlp):
    """With overlap_steps (the default) run() may return before the optimizer's updates ran;
    their failure (a NaN learning rate under check_nan_inf: sgd's output) is raised by that
    run, or by finish() after it, never lost; finish() with nothing left returns."""
    model, feed = small_mlp
    checked = pe_actor.ExecutionStrategy()
    checked.check_nan_inf = True
    exe = pe_actor.ParallelExecutor(pe_actor.cpu_places(1), model.startup, model.main, exec_strategy=checked)
    exe.run(feed=feed, fetch_list=[model.loss])
    exe.finish()
    exe.set_var("learning_rate_0", np.full((1,), np.nan, dtype=np.float32))
    with pytest.raises(pe_actor.Error, match=r"\(sgd\) on cpu:0: output variable"):
        exe.run(feed=feed, fetch_list=[model.loss])
        exe.finish()


def test_cuda_graphs_are_refused_on_cpu_places_naming_why(small_mlp):
    model, _ = small_mlp
    graphs = switched_on(pe_actor.ExecutionStrategy(), "cuda_graphs")
    with pytest.raises(pe_actor.Error, match=r"CUDA graphs \(--cuda-graphs\) cannot run here: cpu:0 is not a GPU place"):
        pe_actor.ParallelExecutor(pe_actor.cpu_places(2), model.startup, model.main, exec_strategy=graphs)


@pytest.mark.parametrize("switch,value,default", [("pin_places", True, None), ("pin_places", False, None),
                                                  ("actor_per_op", True, False),
                                                  ("overlap_steps", False, True)])
def test_scheduling_switches_train_the_same_steps(small_mlp, switch, value, default):
    """pin_places (device threads on cores of their own: True always, False never, None
    where the places fill the cores), actor_per_op (no firing groups) and overlap_steps
    (a step's tail overlapping the next step's start) change how steps are scheduled, not
    what they compute."""
    model, feed = small_mlp
    switched = switched_on(pe_actor.ExecutionStrategy(), switch, value, default)
    default = pe_actor.ParallelExecutor(pe_actor.cpu_places(2), model.startup, model.main)
    other = pe_actor.ParallelExecutor(pe_actor.cpu_places(2), model.startup, model.main, exec_strategy=switched)
    assert train(other, model, feed, 5) == train(default, model, feed, 5)


@pytest.mark.parametrize("combined", [False, True])
def test_saved_parameters_load_into_a_new_executor(small_mlp, tmp_path, combined):
    model, feed = small_mlp
    exe = pe_actor.ParallelExecutor(pe_actor.cpu_places(2), model.startup, model.main)
    train(exe, model, feed, 3)
    path = tmp_path / ("params.bin" if combined else "params")
    exe.save_params(str(path), combined=combined)
    fresh = pe_actor.ParallelExecutor(pe_actor.cpu_places(2), model.startup, model.main)
    assert not np.array_equal(fresh.get_var("fc_0.w_0"), exe.get_var("fc_0.w_0"))
    names = fresh.load_params(str(path))
    assert "fc_0.w_0" in names and "learning_rate_0" in names
    for p in range(2):
        np.testing.assert_array_equal(fresh.get_var("fc_0.w_0", p), exe.get_var("fc_0.w_0", 0))
    np.testing.assert_array_equal(train(fresh, model, feed, 2), train(exe, model, feed, 2))


def test_set_var_replaces_a_parameter_on_every_place(small_mlp):
    model, _ = small_mlp
    exe = pe_actor.ParallelExecutor(pe_actor.cpu_places(2), model.startup, model.main)
    w = np.full(exe.get_var("fc_0.w_0").shape, 0.5, dtype=np.float32)
    exe.set_var("fc_0.w_0", w)
    for p in range(2):
        np.testing.assert_array_equal(exe.get_var("fc_0.w_0", p), w)
    with pytest.raises(pe_actor.Error, match="not a persistable"):
        exe.set_var("image", w)
    with pytest.raises(IndexError):
        exe.get_var("fc_0.w_0", 2)


def test_a_trace_of_the_recorded_steps_is_written(small_mlp, tmp_path):
    model, feed = small_mlp
    exe = pe_actor.ParallelExecutor(pe_actor.cpu_places(2), model.startup, model.main)
    exe.run(feed=feed, fetch_list=[model.loss])
    path = tmp_path / "trace.json"
    exe.start_trace(str(path))
    with pytest.raises(pe_actor.Error, match="recording already"):
        exe.start_trace(str(path))
    train(exe, model, feed, 3)
    firings = exe.stop_trace()
    trace = json.loads(path.read_text())
    spans = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("name") == "mul"]
    assert firings > 0 and spans
    assert {e["args"]["step"] for e in spans} == {2, 3, 4}
    with pytest.raises(pe_actor.Error, match="no trace is recording"):
        exe.stop_trace()


def test_places_and_strategies_print_as_paddle_users_write_them():
    assert [str(p) for p in pe_actor.cpu_places(2)] == ["cpu:0", "cpu:1"]
    assert pe_actor.Place("cpu:1") == pe_actor.CPUPlace(1)
    assert pe_actor.Place("gpu:0").kind == "gpu"
    exe = pe_actor.ParallelExecutor(["cpu:0", pe_actor.CPUPlace(1)], EMPTY_STARTUP, assign_program("FP32"))
    assert exe.place_names == ["cpu:0", "cpu:1"]
    assert "AllReduce" in repr(pe_actor.BuildStrategy())


def big_matmul_program():
    """x [-1, 1024] (fed) times w [1024, 2048] (fed, so x has 1024 rows too) -> y: one kernel long enough (tens of
    milliseconds on one core) that a millisecond's stall timeout expires while it runs."""
    return pe_actor.Program(text_program(
        [tensor_var("x", "FP32", (-1, 1024)), tensor_var("w", "FP32", (1024, 2048)),
         tensor_var("y", "FP32", (-1, 2048))],
        [op("matmul_v2", {"X": "x", "Y": "w"}, {"Out": "y"})]))


def test_stall_settings_reach_the_executor_and_its_reports_reach_python():
    default = pe_actor.ExecutionStrategy()
    assert default.stall_timeout == 300
    assert default.on_stall == pe_actor.ExecutionStrategy.StallAction.Fail
    assert default.on_stall_report is None
    assert "stall_timeout=300" in repr(default)
    rng = np.random.default_rng(1)
    feed = {"x": rng.standard_normal((1024, 1024), dtype=np.float32),  # rows: as many as w
            "w": rng.standard_normal((1024, 2048), dtype=np.float32)}
    places = pe_actor.cpu_places(1)

    # Healthy: the default timeout is far above one kernel.
    (want,) = pe_actor.ParallelExecutor(places, EMPTY_STARTUP, big_matmul_program()).run(
        feed=feed, fetch_list=["y"])

    reports = []
    report = pe_actor.ExecutionStrategy()
    report.stall_timeout = 0.001
    report.on_stall = pe_actor.ExecutionStrategy.StallAction.Report
    report.on_stall_report = reports.append
    exe = pe_actor.ParallelExecutor(places, EMPTY_STARTUP, big_matmul_program(), exec_strategy=report)
    (got,) = exe.run(feed=feed, fetch_list=["y"])
    np.testing.assert_array_equal(got, want)  # reported, kept waiting, finished
    assert reports and "matmul_v2" in reports[0], reports[:1]

    fail = pe_actor.ExecutionStrategy()
    fail.stall_timeout = 0.001
    fail.on_stall_report = reports.append
    exe = pe_actor.ParallelExecutor(places, EMPTY_STARTUP, big_matmul_program(), exec_strategy=fail)
    with pytest.raises(pe_actor.Error, match="stall"):
        exe.run(feed=feed, fetch_list=["y"])

    off = pe_actor.ExecutionStrategy()
    off.stall_timeout = 0
    (got,) = pe_actor.ParallelExecutor(places, EMPTY_STARTUP, big_matmul_program(),
                                       exec_strategy=off).run(feed=feed, fetch_list=["y"])
    np.testing.assert_array_equal(got, want)

    for bad in (-1.0, float("inf"), float("nan")):
        wrong = pe_actor.ExecutionStrategy()
        wrong.stall_timeout = bad
        with pytest.raises(ValueError, match="stall_timeout must be 0"):
            pe_actor.ParallelExecutor(places, EMPTY_STARTUP, big_matmul_program(), exec_strategy=wrong)
    not_callable = pe_actor.ExecutionStrategy()
    not_callable.on_stall_report = 3
    with pytest.raises(ValueError, match="on_stall_report must be callable"):
        pe_actor.ParallelExecutor(places, EMPTY_STARTUP, big_matmul_program(), exec_strategy=not_callable)


def test_sync_batch_norm_makes_two_places_normalise_as_one_place_with_the_whole_batch():
    """BuildStrategy.sync_batch_norm (Paddle's name): batch statistics over every place."""
    model = pe_actor.models.cnn(channels=[4, 8], fc=[16], classes=4, learning_rate=0.01, seed=5)
    rng = np.random.default_rng(11)
    feed = {model.image: rng.standard_normal((12, 1, 28, 28), dtype=np.float32),
            model.label: rng.integers(0, 4, (12, 1), dtype=np.int64)}

    def losses(places, sync):
        build = pe_actor.BuildStrategy()
        build.sync_batch_norm = sync
        exe = pe_actor.ParallelExecutor(pe_actor.cpu_places(places), model.startup, model.main,
                                        build_strategy=build)
        return train(exe, model, feed, 5)

    switched_on(pe_actor.BuildStrategy(), "sync_batch_norm")
    one = losses(1, False)
    np.testing.assert_allclose(losses(2, True), one, rtol=1e-5)
    np.testing.assert_allclose(losses(3, True), one, rtol=1e-5)
    # Each place normalising its own rows is another model: the flag is what made them equal.
    assert np.max(np.abs(np.array(losses(2, False)) - one) / np.abs(one)) > 1e-4
