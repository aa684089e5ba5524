"""Writes the sparse-gradient fixtures saved by PaddlePaddle itself:
tests/data/paddle_bow_<optimizer>/, a bag-of-words classifier whose embedding has a sparse
gradient (nn.Embedding(sparse=True): lookup_table_v2 with is_sparse, a SELECTED_ROWS
W@GRAD read by the optimizer directly), trained with SGD, Adam, lazy Adam and momentum
(with L2Decay, folded into the momentum op): the programs,
Paddle's initial parameters, one batch (ids.npy, label.npy) and Paddle's 20-step losses on 1
place and on its own 2-place ParallelExecutor (make_paddle_fixture.save_training_fixture).

Run once by hand (needs `pip install paddlepaddle==2.6.2`); the outputs are committed.
"""
import os
import sys

import numpy as np
import paddle
import paddle.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_paddle_fixture import BATCH, out_dir, save_training_fixture  # noqa: E402

VOCAB, WIDTH, WORDS, CLASSES = 40, 8, 6, 4


def bow_batch(seed):
    """BATCH rows of WORDS ids each: class c draws its words mostly from its own quarter of the
    vocabulary, so words repeat within and across rows (summed rows in the sparse gradient) and
    many rows of the table are never touched."""
    rng = np.random.default_rng(seed)
    label = rng.integers(0, CLASSES, size=(BATCH, 1)).astype("int64")
    band = VOCAB // CLASSES
    ids = np.empty((BATCH, WORDS), dtype="int64")
    for i in range(BATCH):
        own = label[i, 0] * band + rng.integers(0, band // 2, size=WORDS)
        noise = rng.integers(0, VOCAB, size=WORDS)
        ids[i] = np.where(rng.uniform(size=WORDS) < 0.75, own, noise)
    return ids, label


def bow_fixture(name, optimizer, seed):
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = seed
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        ids = paddle.static.data("ids", [-1, WORDS], "int64")
        label = paddle.static.data("label", [-1, 1], "int64")
        embedded = paddle.nn.Embedding(VOCAB, WIDTH, sparse=True)(ids)
        logits = paddle.nn.Linear(WIDTH, CLASSES)(paddle.mean(embedded, axis=1))
        per_sample = F.cross_entropy(logits, label, reduction="none")
        loss = paddle.mean(per_sample)
        optimizer().minimize(loss)
    x, y = bow_batch(seed)
    save_training_fixture(os.path.join(out_dir, "paddle_bow_" + name), main, startup, loss, per_sample,
                          {"ids": x, "label": y})


if __name__ == "__main__":
    bow_fixture("sgd", lambda: paddle.optimizer.SGD(learning_rate=0.5), 31)
    bow_fixture("adam", lambda: paddle.optimizer.Adam(learning_rate=0.05), 32)
    bow_fixture("adam_lazy", lambda: paddle.optimizer.Adam(learning_rate=0.05, lazy_mode=True), 33)
    bow_fixture("momentum", lambda: paddle.optimizer.Momentum(learning_rate=0.1, momentum=0.9,
                                                              weight_decay=paddle.regularizer.L2Decay(1e-3)), 34)
