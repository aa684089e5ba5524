"""Writes tests/data/paddle_encoder_classifier/: a small BERT-style text classifier written
as a Paddle user writes one with paddle.nn in static-graph mode -- word embeddings
(nn.Embedding, dense gradient) plus position embeddings whose position ids the program
computes (ones_like, cumsum, minus one, as BERT code does), two
nn.TransformerEncoderLayer(activation="gelu") with every dropout 0 (no random masks), a
LayerNorm, the first token, a Linear to the classes and cross entropy, trained by AdamW with
weight decay on every parameter and ClipGradByGlobalNorm.

Saved as scripts/make_paddle_fixture.py saves its training fixtures (startup.pb, main.pb,
params/, the batch as input_ids.npy and label.npy, Paddle's losses of 20 steps on 1 place and
on Paddle's own 2-place ParallelExecutor); and infer/, the inference model of its logits
with Paddle's initial parameters (save_inference_model: model.pdmodel, model.pdiparams), the
batch's input_ids.npy and Paddle's logits on it, output_0.npy.

Run once by hand (needs `pip install paddlepaddle==2.6.2`); the outputs are committed.
"""
import os
import sys

import numpy as np
import paddle
import paddle.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_paddle_fixture import out_dir, save_training_fixture  # noqa: E402  (static mode)

VOCAB, HIDDEN, HEADS, FFN, WORDS, CLASSES, BATCH = 100, 32, 2, 64, 8, 4, 16


def encoder_batch(seed):
    """BATCH sentences of WORDS ids; the class is the first word's id mod CLASSES, so the first
    token's state (after attention over the sentence) has what it takes."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, VOCAB, size=(BATCH, WORDS)).astype("int64")
    label = (ids[:, :1] % CLASSES).astype("int64")
    return ids, label


class EncoderClassifier(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        nn = paddle.nn
        self.words = nn.Embedding(VOCAB, HIDDEN, sparse=False)
        self.positions = nn.Embedding(WORDS, HIDDEN)
        self.layers = nn.LayerList([
            nn.TransformerEncoderLayer(HIDDEN, HEADS, FFN, dropout=0.0, activation="gelu",
                                       attn_dropout=0.0, act_dropout=0.0)
            for _ in range(2)])
        self.norm = nn.LayerNorm(HIDDEN)
        self.classifier = nn.Linear(HIDDEN, CLASSES)

    def forward(self, input_ids):
        ones = paddle.ones_like(input_ids, dtype="int64")
        position_ids = paddle.cumsum(ones, axis=-1) - ones
        position_ids.stop_gradient = True
        h = self.words(input_ids) + self.positions(position_ids)
        for layer in self.layers:
            h = layer(h)
        return self.classifier(self.norm(h)[:, 0])


def encoder_fixture(seed):
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = seed
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        ids = paddle.static.data("input_ids", [-1, WORDS], "int64")
        label = paddle.static.data("label", [-1, 1], "int64")
        logits = EncoderClassifier()(ids)
        per_sample = F.cross_entropy(logits, label, reduction="none")
        loss = paddle.mean(per_sample)
        test = main.clone(for_test=True)
        paddle.optimizer.AdamW(learning_rate=0.002, weight_decay=0.01,
                               grad_clip=paddle.nn.ClipGradByGlobalNorm(1.0)).minimize(loss)
    print("ops:", sorted({op.type for op in main.global_block().ops}))
    x, y = encoder_batch(seed)
    d = os.path.join(out_dir, "paddle_encoder_classifier")
    save_training_fixture(d, main, startup, loss, per_sample, {"input_ids": x, "label": y})
    save_inference_fixture(os.path.join(d, "infer"), startup, test, ids, logits, x)


def save_inference_fixture(d, startup, test, ids, logits, x):
    """d/: the inference model of `logits` (fed `ids`) with the initial parameters, the batch
    `x` as input_ids.npy and Paddle's logits on it as output_0.npy."""
    os.makedirs(d, exist_ok=True)
    exe = paddle.static.Executor(paddle.CPUPlace())
    with paddle.static.scope_guard(paddle.static.Scope()):
        exe.run(startup)
        paddle.static.save_inference_model(os.path.join(d, "model"), [ids], [logits], exe, program=test)
    with paddle.static.scope_guard(paddle.static.Scope()):
        program, feeds, fetches = paddle.static.load_inference_model(os.path.join(d, "model"), exe)
        for op in program.global_block().ops:
            op.desc.remove_attr("op_callstack")
        (out,) = exe.run(program, feed={feeds[0]: x}, fetch_list=fetches)
    # The saved program without the ops' Python call stacks (write_program's reason).
    with open(os.path.join(d, "model.pdmodel"), "wb") as f:
        f.write(program.desc.serialize_to_string())
    np.save(os.path.join(d, feeds[0] + ".npy"), x)
    np.save(os.path.join(d, "output_0.npy"), out)
    print("inference:", feeds, [t.name for t in fetches], out.shape)


if __name__ == "__main__":
    encoder_fixture(51)
