"""1000 steps of feeding and fetching leave the resident set where it was."""
import numpy as np

import pe_actor
from conftest import rss_bytes


def test_a_thousand_steps_do_not_leak():
    model = pe_actor.models.mlp(input_width=256, hidden=[16], classes=4)
    exe = pe_actor.ParallelExecutor(pe_actor.cpu_places(2), model.startup, model.main)
    rng = np.random.default_rng(4)
    # 64 KiB fed and fetched back per step (the image): a leak of either is 64 MiB here.
    feed = {model.image: rng.standard_normal((64, 256), dtype=np.float32),
            model.label: rng.integers(0, 4, (64, 1), dtype=np.int64)}
    fetches = [model.loss, model.accuracy, model.image]

    def steps(n):
        for i in range(n):
            merged = i % 2 == 0
            out = exe.run(feed=feed, fetch_list=fetches, return_merged=merged)
            assert len(out) == 3

    steps(100)  # allocator pools and caches settle
    before = rss_bytes()
    steps(1000)
    grown = rss_bytes() - before
    assert grown < 8 * 2**20, f"RSS grew by {grown / 2**20:.1f} MiB over 1000 steps"
