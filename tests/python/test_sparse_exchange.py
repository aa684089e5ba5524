"""BuildStrategy.sparse_exchange on a program Paddle 2.6.2 saved with a sparse embedding
(tests/data/paddle_bow_adam_lazy): gathering the rows, all-reducing the table densely and the
automatic choice train to the same losses within 1e-6 on 2 places, and Paddle's own 2-place
losses within 1e-6."""
import numpy as np
import pytest

import pe_actor
from conftest import DATA_DIR

FIXTURE = DATA_DIR / "paddle_bow_adam_lazy"
Exchange = pe_actor.BuildStrategy.SparseExchange


def losses(exchange, steps=20):
    strategy = pe_actor.BuildStrategy()
    strategy.sparse_exchange = exchange
    exe = pe_actor.ParallelExecutor(pe_actor.cpu_places(2), str(FIXTURE / "startup.pb"),
                                    (FIXTURE / "main.pb").read_bytes(),
                                    loss_name=(FIXTURE / "loss_name.txt").read_text().strip(),
                                    build_strategy=strategy)
    exe.load_params(str(FIXTURE / "params"))
    feed = {"ids": np.load(FIXTURE / "ids.npy"), "label": np.load(FIXTURE / "label.npy")}
    return np.array([float(exe.run(feed=feed, fetch_list=[exe.loss_name])[0][0]) for _ in range(steps)])


def test_every_exchange_trains_to_paddles_losses():
    sparse, dense, auto = losses(Exchange.Sparse), losses(Exchange.Dense), losses(Exchange.Auto)
    np.testing.assert_allclose(dense, sparse, rtol=0, atol=1e-6)
    np.testing.assert_array_equal(auto, dense)  # this table is small: auto all-reduces it
    np.testing.assert_allclose(sparse, np.load(FIXTURE / "losses_2p.npy"), rtol=0, atol=1e-6)


def test_the_field_defaults_to_auto_and_prints():
    strategy = pe_actor.BuildStrategy()
    assert strategy.sparse_exchange == Exchange.Auto
    strategy.sparse_exchange = Exchange.Dense
    assert "sparse_exchange=SparseExchange.Dense" in repr(strategy)
    with pytest.raises(TypeError):
        strategy.sparse_exchange = "dense"
