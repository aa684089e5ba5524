"""The GIL is released while a step runs, and executors are safe to call from several threads."""
import threading
import time

import numpy as np

import pe_actor


def big_batch(model, rows):
    rng = np.random.default_rng(1)
    return {model.image: rng.standard_normal((rows, 784), dtype=np.float32),
            model.label: rng.integers(0, 10, (rows, 1), dtype=np.int64)}


def test_a_python_thread_makes_progress_while_a_long_step_runs():
    model = pe_actor.models.mlp()
    exe = pe_actor.ParallelExecutor(pe_actor.cpu_places(1), model.startup, model.main)
    feed = big_batch(model, 8192)
    exe.run(feed=feed, fetch_list=[model.loss])
    ticks, stop = [], threading.Event()

    def spin():
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.001)

    thread = threading.Thread(target=spin)
    thread.start()
    time.sleep(0.02)
    start = time.monotonic()
    exe.run(feed=feed, fetch_list=[model.loss])
    end = time.monotonic()
    stop.set()
    thread.join()
    assert end - start > 0.05, "the step is too short for this test to mean anything"
    # Holding the GIL through the step, run() would let the thread in only at its edges
    # (a switch interval each): a tick or two, not one per millisecond.
    inside = [t for t in ticks if start < t < end]
    assert len(inside) >= 10, f"{len(inside)} ticks in a {end - start:.3f} s step"


def test_threads_sharing_an_executor_take_turns():
    model = pe_actor.models.mlp(input_width=32, hidden=[16], classes=4)
    train = pe_actor.ParallelExecutor(pe_actor.cpu_places(2), model.startup, model.main)
    test = pe_actor.ParallelExecutor(main_program=model.test, share_vars_from=train)
    rng = np.random.default_rng(2)
    feed = {model.image: rng.standard_normal((16, 32), dtype=np.float32),
            model.label: rng.integers(0, 4, (16, 1), dtype=np.int64)}
    results, errors = [], []

    def loop(exe):
        try:
            for _ in range(50):
                results.append(exe.run(feed=feed, fetch_list=[model.loss])[0][0])
        except Exception as e:  # pragma: no cover - reported by the assert below
            errors.append(e)

    threads = [threading.Thread(target=loop, args=(e,)) for e in (train, train, test)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 150 and np.isfinite(results).all()
