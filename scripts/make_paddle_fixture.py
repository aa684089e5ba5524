"""Writes the fixtures saved by PaddlePaddle itself (static graph API), so the tests prove we
load, train and infer what Paddle writes: tests/data/paddle_mlp_{startup,main}.pb (an MLP
training program), tests/data/paddle_params/ (parameter files and an inference model) and
tests/data/paddle_<name>/ (training programs with Paddle's parameters, a batch and Paddle's
losses on 1 and 2 places).

Run once by hand (needs `pip install paddlepaddle==2.6.2`); the outputs are committed.
"""
import os
import sys

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle.base import core

paddle.enable_static()
out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "data")

def write_mlp_fixture(out_dir):
    """tests/data/paddle_mlp_{startup,main}.pb: an MLP training program."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 7
    with paddle.static.program_guard(main, startup):
        image = paddle.static.data("image", [-1, 784], "float32")
        label = paddle.static.data("label", [-1, 1], "int64")
        hidden = paddle.static.nn.fc(image, 64, activation="relu")
        logits = paddle.static.nn.fc(hidden, 10)
        loss = paddle.mean(paddle.nn.functional.softmax_with_cross_entropy(logits, label))
        paddle.optimizer.SGD(learning_rate=0.1).minimize(loss)

    for name, program in (("startup", startup), ("main", main)):
        with open(os.path.join(out_dir, f"paddle_mlp_{name}.pb"), "wb") as f:
            f.write(program.desc.serialize_to_string())
    print("loss:", loss.name)
    for op in main.global_block().ops:
        print(op.type, {k: op.input(k) for k in op.input_names}, {k: op.output(k) for k in op.output_names})


def write_program(path, program):
    """Saves `program` as Paddle serialises it, without the ops' op_callstack attributes (Python
    call stacks: most of the bytes, and machine-specific). Changes the program in place."""
    for op in program.global_block().ops:
        op.desc.remove_attr("op_callstack")
    with open(path, "wb") as f:
        f.write(program.desc.serialize_to_string())


def fixed_batch(rows, width):
    """The deterministic batch the parameter tests feed (the C++ tests compute the same values):
    image[i][j] = ((31 i + 17 j) mod 101) / 101 - 0.5 in float32, label[i] = i mod 10."""
    i, j = np.meshgrid(np.arange(rows), np.arange(width), indexing="ij")
    image = (((31 * i + 17 * j) % 101) / 101.0 - 0.5).astype("float32")
    label = (np.arange(rows) % 10).astype("int64").reshape(rows, 1)
    return image, label


def write_params_fixture(data_dir):
    """Writes tests/data/paddle_params/: a tiny MLP (16 -> 8 relu -> 10, SGD 0.1) as Paddle saves
    it (without the ops' op_callstack attributes) -- main.pb and startup.pb; its initial persistables one file per variable (init/, save_vars)
    and combined (init.combined, save_combine); loss.txt, Paddle's loss on fixed_batch(4, 16) with
    those parameters; trained/, the persistables after that one SGD step; the inference model of
    its logits and softmax (model.pdmodel, model.pdiparams, save_inference_model) with
    input.npy (fixed_batch(5, 16)'s image) and Paddle's outputs output_0.npy, output_1.npy."""
    out = os.path.join(data_dir, "paddle_params")
    os.makedirs(out, exist_ok=True)
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 11
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        image = paddle.static.data("image", [-1, 16], "float32")
        label = paddle.static.data("label", [-1, 1], "int64")
        hidden = paddle.static.nn.fc(image, 8, activation="relu")
        logits = paddle.static.nn.fc(hidden, 10)
        softmax = paddle.nn.functional.softmax(logits)
        loss = paddle.mean(paddle.nn.functional.softmax_with_cross_entropy(logits, label))
        paddle.optimizer.SGD(learning_rate=0.1).minimize(loss)
    for name, program in (("startup", startup), ("main", main)):
        write_program(os.path.join(out, f"{name}.pb"), program)

    exe = paddle.static.Executor(paddle.CPUPlace())
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        persistable = paddle.static.io.is_persistable
        paddle.static.save_vars(exe, os.path.join(out, "init"), main, predicate=persistable)
        paddle.static.save_vars(exe, out, main, predicate=persistable, filename="init.combined")
        paddle.static.save_inference_model(os.path.join(out, "model"), [image], [logits, softmax],
                                           exe, program=main)
        x, y = fixed_batch(4, 16)
        (first,) = exe.run(main, feed={"image": x, "label": y}, fetch_list=[loss])
        with open(os.path.join(out, "loss.txt"), "w") as f:
            f.write(f"{float(first):.9g}\n")
        paddle.static.save_vars(exe, os.path.join(out, "trained"), main, predicate=persistable)

    with paddle.static.scope_guard(paddle.static.Scope()):
        program, feeds, fetches = paddle.static.load_inference_model(os.path.join(out, "model"), exe)
        x, _ = fixed_batch(5, 16)
        np.save(os.path.join(out, "input.npy"), x)
        results = exe.run(program, feed={feeds[0]: x}, fetch_list=fetches)
        for k, (target, value) in enumerate(zip(fetches, results)):
            np.save(os.path.join(out, f"output_{k}.npy"), value)
            print("fetch", k, target.name, value.shape)
    print("first loss:", float(first))



# Training fixtures (tests/data/paddle_<name>/, tests/paddle_training_test.cpp): the startup
# and main programs, Paddle's initial parameters (save_persistables: one file per variable),
# one batch (image.npy, label.npy) and Paddle's losses of 20 steps on that batch on 1 and 2
# places (losses_1p.npy, losses_2p.npy).
STEPS, BATCH = 20, 8


def training_batch(image_shape, seed):
    """A learnable batch: class c brightens one band of the image."""
    rng = np.random.default_rng(seed)
    label = rng.integers(0, 10, size=(BATCH, 1)).astype("int64")
    image = rng.uniform(0, 0.2, size=(BATCH,) + image_shape).astype("float32")
    flat = image.reshape(BATCH, -1)
    band = flat.shape[1] // 10
    for i in range(BATCH):
        flat[i, label[i, 0] * band:(label[i, 0] + 1) * band] += 1.0
    return flat.reshape(image.shape), label


def mlp_cross_entropy2(image, label):
    hidden = paddle.static.nn.fc(image, 16, activation="relu")
    prob = F.softmax(paddle.static.nn.fc(hidden, 10))
    helper = paddle.base.layer_helper.LayerHelper("cross_entropy2")
    y, match_x, x_shape = (helper.create_variable_for_type_inference("float32") for _ in range(3))
    helper.append_op(type="cross_entropy2", inputs={"X": [prob], "Label": [label]},
                     outputs={"Y": [y], "MatchX": [match_x], "XShape": [x_shape]},
                     attrs={"ignore_index": -100})
    paddle.metric.accuracy(prob, label)
    return y, paddle.optimizer.SGD(learning_rate=0.1)


def mlp_dropout_l2decay(image, label):
    hidden = paddle.static.nn.fc(image, 16, activation="relu")
    # Masks are random draws that cannot match Paddle's generator, and F.dropout with p = 0
    # emits no op: the dropout ops run as in inference (is_test; out = x * (1 - p) for
    # downgrade_in_infer), which is deterministic, and are still in the trained program.
    hidden = F.dropout(hidden, p=0.25, training=False, mode="downscale_in_infer")
    hidden = F.dropout(hidden, p=0.5, training=False, mode="upscale_in_train")
    logits = paddle.static.nn.fc(hidden, 10)
    return (F.cross_entropy(logits, label, reduction="none"),
            paddle.optimizer.SGD(learning_rate=0.1, weight_decay=paddle.regularizer.L2Decay(0.01)))


def lenet_batch_norm(image, label):
    h = image
    for channels in (4, 8):
        h = paddle.static.nn.conv2d(h, channels, 5, padding=2, bias_attr=False)
        h = paddle.static.nn.batch_norm(h, act="relu")
        h = F.max_pool2d(h, 2, 2)
    h = paddle.static.nn.fc(h, 32, activation="relu")
    h = paddle.static.nn.fc(h, 16, activation="relu")
    return (F.cross_entropy(paddle.static.nn.fc(h, 10), label, reduction="none"),
            paddle.optimizer.Momentum(learning_rate=0.01, momentum=0.9,
                                      weight_decay=paddle.regularizer.L2Decay(1e-4)))


class BasicBlock(paddle.nn.Layer):
    """conv3x3-bn-relu-conv3x3-bn plus the input (a stride-2 1x1 conv and bn where the shape
    changes), then relu."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        nn = paddle.nn
        self.c1, self.b1 = nn.Conv2D(cin, cout, 3, stride, 1, bias_attr=False), nn.BatchNorm2D(cout)
        self.c2, self.b2 = nn.Conv2D(cout, cout, 3, 1, 1, bias_attr=False), nn.BatchNorm2D(cout)
        self.short = None
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2D(cin, cout, 1, stride, bias_attr=False), nn.BatchNorm2D(cout))

    def forward(self, x):
        y = self.b2(self.c2(F.relu(self.b1(self.c1(x)))))
        return F.relu(y + (x if self.short is None else self.short(x)))


def resnet_small(image, label):
    nn = paddle.nn
    stem = nn.Sequential(nn.Conv2D(3, 8, 3, 1, 1, bias_attr=False), nn.BatchNorm2D(8), nn.ReLU())
    stages = nn.Sequential(BasicBlock(8, 8, 1), BasicBlock(8, 16, 2), BasicBlock(16, 32, 2))
    h = nn.AdaptiveAvgPool2D(1)(stages(stem(image)))
    logits = nn.Linear(32, 10)(paddle.flatten(h, 1))
    return (F.cross_entropy(logits, label, reduction="none"),
            paddle.optimizer.Momentum(learning_rate=0.01, momentum=0.9,
                                      weight_decay=paddle.regularizer.L2Decay(1e-4)))


def losses(main, startup, loss, per_sample, feed, places):
    """Paddle's losses of STEPS steps on `places` CPU places: the mean of the per-sample losses
    of all places' rows."""
    scope = paddle.static.Scope()
    exe = paddle.static.Executor(paddle.CPUPlace())
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        if places == 1:
            return np.array([float(np.mean(exe.run(main, feed=feed, fetch_list=[per_sample])[0]))
                             for _ in range(STEPS)], dtype="float32")
        return np.array(parallel_losses(main, loss, per_sample, feed, places, scope),
                        dtype="float32")


def parallel_program(main, loss_name, places, scope):
    """`main` compiled for Paddle 2.4's ParallelExecutor (its `_executor`) on `places` CPU
    places, all-reducing the gradients of `loss_name`, its local scopes under `scope` (whose
    startup has run). Keep the compiled program while its executor runs: it owns the graph."""
    make = core.ParallelExecutor
    core.ParallelExecutor = lambda p, v, _, *rest: make(p * places, v, loss_name, *rest)
    try:
        strategy = paddle.static.BuildStrategy()
        strategy.fuse_all_reduce_ops = False  # needs graph attributes 2.6 no longer sets
        compiled = paddle.static.CompiledProgram(main, build_strategy=strategy)
        compiled._compile(scope, paddle.CPUPlace())
    finally:
        core.ParallelExecutor = make
    return compiled


def parallel_losses(main, loss, per_sample, feed, places, scope):
    """Paddle 2.6 runs a CompiledProgram on one place with its standalone executor, and its
    _compile_data_parallel passes the ParallelExecutor an empty loss name (no gradient
    all-reduce) and a single place. Build that ParallelExecutor as 2.4's with_data_parallel did
    (the loss name, `places` CPU places) and drive it as 2.4's executor did: feed split along
    dim 0 into the places' local scopes, fetches per place."""
    compiled = parallel_program(main, loss.name, places, scope)
    executor = compiled._executor
    out = []
    for _ in range(STEPS):
        tensors = {}
        for name, value in feed.items():
            tensors[name] = core.LoDTensor()
            tensors[name].set(value, paddle.CPUPlace())
        executor.feed_and_split_tensor_into_local_scopes(tensors)
        per_place = executor.run([per_sample.name], False)._move_to_list()[0]
        out.append(float(np.mean(np.concatenate([np.array(t) for t in per_place]))))
    return out


def training_fixture(out_dir, name, build, image_shape, seed):
    with paddle.utils.unique_name.guard():
        _training_fixture(out_dir, name, build, image_shape, seed)


def _training_fixture(out_dir, name, build, image_shape, seed):
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = seed
    with paddle.static.program_guard(main, startup):
        image = paddle.static.data("image", (-1,) + image_shape, "float32")
        label = paddle.static.data("label", [-1, 1], "int64")
        per_sample, optimizer = build(image, label)
        loss = paddle.mean(per_sample)
        optimizer.minimize(loss)
    x, y = training_batch(image_shape, seed)
    save_training_fixture(os.path.join(out_dir, "paddle_" + name), main, startup, loss, per_sample,
                          {"image": x, "label": y})


def save_training_fixture(d, main, startup, loss, per_sample, feed):
    """Writes directory `d` of a training fixture: startup.pb, main.pb, Paddle's initial
    persistables (params/), each feed as <name>.npy, Paddle's losses on 1 and 2 places and the
    loss's name."""
    os.makedirs(os.path.join(d, "params"), exist_ok=True)
    for part, program in (("startup", startup), ("main", main)):
        write_program(os.path.join(d, part + ".pb"), program)
    scope = paddle.static.Scope()
    exe = paddle.static.Executor(paddle.CPUPlace())
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        paddle.distributed.io.save_persistables(exe, os.path.join(d, "params"), main)
    for name, value in feed.items():
        np.save(os.path.join(d, name + ".npy"), value)
    for places in (1, 2):
        np.save(os.path.join(d, f"losses_{places}p.npy"),
                losses(main, startup, loss, per_sample, feed, places))
    with open(os.path.join(d, "loss_name.txt"), "w") as f:
        f.write(loss.name + "\n")
    print(os.path.basename(d), loss.name, np.load(os.path.join(d, "losses_1p.npy"))[[0, -1]],
          np.load(os.path.join(d, "losses_2p.npy"))[[0, -1]])


# A fixture whose feeds are not an image and a label (tests/data/paddle_bow_classifier/,
# tests/cli_feeds_test.cpp): a bag-of-words classifier fed input_ids (INT64 [-1, 8]) and label
# (INT64 [-1, 1]), saved and measured as the training fixtures above are, its batch as
# input_ids.npy and label.npy.
VOCAB, WORDS, CLASSES = 40, 8, 4


def bow_batch(seed):
    """BATCH sentences of WORDS ids; the class is the sentence's id sum mod CLASSES."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, VOCAB, size=(BATCH, WORDS)).astype("int64")
    label = (ids.sum(axis=1, keepdims=True) % CLASSES).astype("int64")
    return ids, label


def bow_classifier_fixture(out_dir, seed):
    with paddle.utils.unique_name.guard():
        main, startup = paddle.static.Program(), paddle.static.Program()
        main.random_seed = startup.random_seed = seed
        with paddle.static.program_guard(main, startup):
            ids = paddle.static.data("input_ids", [-1, WORDS], "int64")
            label = paddle.static.data("label", [-1, 1], "int64")
            embedded = paddle.nn.Embedding(VOCAB, 16, sparse=False)(ids)  # lookup_table_v2
            logits = paddle.nn.Linear(16, CLASSES)(paddle.mean(embedded, axis=1))
            per_sample = F.cross_entropy(logits, label, reduction="none")
            loss = paddle.mean(per_sample)
            paddle.optimizer.SGD(learning_rate=0.5).minimize(loss)
        print("bow_classifier ops:", [op.type for op in main.global_block().ops])
        x, y = bow_batch(seed)
        save_training_fixture(os.path.join(out_dir, "paddle_bow_classifier"), main, startup, loss,
                              per_sample, {"input_ids": x, "label": y})


if __name__ == "__main__":
    write_mlp_fixture(out_dir)
    write_params_fixture(out_dir)
    training_fixture(out_dir, "mlp_cross_entropy2", mlp_cross_entropy2, (784,), 11)
    training_fixture(out_dir, "mlp_dropout_l2decay", mlp_dropout_l2decay, (784,), 12)
    training_fixture(out_dir, "lenet_batch_norm", lenet_batch_norm, (1, 28, 28), 13)
    training_fixture(out_dir, "resnet_small", resnet_small, (3, 16, 16), 21)
    bow_classifier_fixture(out_dir, 31)
