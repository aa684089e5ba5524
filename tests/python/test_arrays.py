"""numpy feeds and fetches: every dtype the engine runs, merged and per place, layouts numpy
may hand over, and feeds that reach the places without a copy."""
import resource

import numpy as np
import pytest

import pe_actor
from conftest import EMPTY_STARTUP, ENGINE_DTYPES, assign_program, op, tensor_var, text_program


def values(dtype, rows):
    data = np.arange(rows * 3).reshape(rows, 3)
    return (data % 2 == 1) if dtype is np.bool_ else data.astype(dtype)


@pytest.mark.parametrize("places", [1, 2])
@pytest.mark.parametrize("dtype", list(ENGINE_DTYPES))
def test_every_dtype_round_trips_merged_and_per_place(dtype, places):
    exe = pe_actor.ParallelExecutor(pe_actor.cpu_places(places), EMPTY_STARTUP,
                                    assign_program(ENGINE_DTYPES[dtype]))
    x = values(dtype, 5)
    (merged,) = exe.run(feed={"x": x}, fetch_list=["y"])
    assert merged.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(merged, x)

    (per_place,) = exe.run(feed={"x": x}, fetch_list=["y"], return_merged=False)
    assert len(per_place) == places
    # 5 rows over the places: the first 5 % places get one more.
    rows = [5] if places == 1 else [3, 2]
    np.testing.assert_array_equal(np.concatenate(per_place), x)
    assert [p.shape[0] for p in per_place] == rows


def test_scalar_metrics_merge_to_the_global_batch_value(small_mlp):
    model, feed = small_mlp
    feed = {k: v[:7] for k, v in feed.items()}  # 4 + 3 rows on two places
    one = pe_actor.ParallelExecutor(pe_actor.cpu_places(1), model.startup, model.test)
    two = pe_actor.ParallelExecutor(pe_actor.cpu_places(2), model.startup, model.test)
    (loss1,) = one.run(feed=feed, fetch_list=[model.loss])
    (loss2,) = two.run(feed=feed, fetch_list=[model.loss])
    assert loss2.shape == loss1.shape
    np.testing.assert_allclose(loss2, loss1, rtol=1e-6)
    (per_place,) = two.run(feed=feed, fetch_list=[model.loss], return_merged=False)
    merged = (4 * per_place[0] + 3 * per_place[1]) / 7
    np.testing.assert_allclose(merged, loss1, rtol=1e-6)


def test_layouts_numpy_hands_over_are_read_as_values():
    exe = pe_actor.ParallelExecutor(["cpu:0", "cpu:1"], EMPTY_STARTUP, assign_program("FP32"))
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    for given in (np.asfortranarray(x), x.astype(">f4"), np.repeat(x, 2, axis=0)[::2],
                  x.tolist()):
        if isinstance(given, list):
            given = np.asarray(given, dtype=np.float32)
        (y,) = exe.run(feed={"x": given}, fetch_list=["y"])
        np.testing.assert_array_equal(y, x)


def test_fetched_arrays_and_engine_arrays_feed_without_changing_values():
    exe = pe_actor.ParallelExecutor(pe_actor.cpu_places(2), EMPTY_STARTUP, assign_program("INT64"))
    x = np.arange(30, dtype=np.int64).reshape(10, 3)
    engine = pe_actor.engine_array(x)
    assert pe_actor.engine_array(engine) is engine
    np.testing.assert_array_equal(engine, x)
    (y,) = exe.run(feed={"x": engine[2:7]}, fetch_list=["y"])  # a row range of it
    np.testing.assert_array_equal(y, x[2:7])
    (z,) = exe.run(feed={"x": y}, fetch_list=["y"])  # a fetched array fed back
    np.testing.assert_array_equal(z, x[2:7])
    (w,) = exe.run(feed={"x": engine[1:9:2]}, fetch_list=["y"])  # strided: copied
    np.testing.assert_array_equal(w, x[1:9:2])
    y[0, 0] = -1  # fetched arrays are the caller's own memory
    (again,) = exe.run(feed={"x": engine[2:7]}, fetch_list=["y"])
    assert again[0, 0] == 6


def peak_rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def test_engine_arrays_are_fed_in_place_and_numpy_arrays_copied_once():
    rows, width = 2048, 16384  # 128 MiB of FP32
    size = rows * width * 4
    main = pe_actor.Program(text_program(
        [tensor_var("x", "FP32", (-1, width)), tensor_var("m", "FP32", (1,))],
        [op("mean", {"X": "x"}, {"Out": "m"})]))
    exe = pe_actor.ParallelExecutor(pe_actor.cpu_places(1), EMPTY_STARTUP, main)
    # np.zeros' pages are not touched until written: only the engine's copy becomes resident.
    engine = pe_actor.engine_array(np.zeros((rows, width), dtype=np.float32))
    engine[:] = 1
    exe.run(feed={"x": engine[:8]}, fetch_list=["m"])  # warm up at a small size
    before = peak_rss()
    (m,) = exe.run(feed={"x": engine}, fetch_list=["m"])
    assert m[0] == 1
    assert peak_rss() - before < size // 4, "an engine array was copied"

    del engine
    ordinary = np.ones((rows, width), dtype=np.float32)  # resident as the engine array was
    before = peak_rss()
    (m,) = exe.run(feed={"x": ordinary}, fetch_list=["m"])
    assert m[0] == 1
    assert peak_rss() - before > size // 2, "the peak did not show a numpy array's copy"


def test_dtypes_without_an_engine_counterpart_are_type_errors():
    exe = pe_actor.ParallelExecutor(pe_actor.cpu_places(1), EMPTY_STARTUP, assign_program("FP32"))
    with pytest.raises(TypeError, match="feed 'x'.*complex"):
        exe.run(feed={"x": np.zeros((2, 3), dtype=np.complex64)}, fetch_list=["y"])
    with pytest.raises(TypeError, match="feed must be a dict"):
        exe.run(feed=[{"x": np.zeros((2, 3), dtype=np.float32)}], fetch_list=["y"])
