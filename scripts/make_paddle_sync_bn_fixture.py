"""Writes tests/data/paddle_sync_bn/: a small CNN trained with Paddle's synchronised batch norm,
written as a Paddle user writes one with paddle.nn in static-graph mode -- image [N, 3, 8, 8],
Conv2D(3 -> 8, 3x3, padding 1) -> SyncBatchNorm(8) -> relu -> Conv2D(8 -> 8, 3x3, stride 2) ->
SyncBatchNorm(8) -> relu -> AdaptiveAvgPool2D(1) -> flatten -> Linear(8 -> 10) -> cross entropy,
Momentum (lr 0.05, momentum 0.9) -- so that its main program holds Paddle's own
sync_batch_norm and sync_batch_norm_grad ops (the grad ops as Paddle's registered grad maker
writes them).

Saved as scripts/make_paddle_fixture.py saves its training fixtures (startup.pb, main.pb
without the ops' op_callstack attributes, params/ from save_persistables, the batch as
image.npy and label.npy, loss_name.txt, Paddle's losses of 20 steps on 1 place as
losses_1p.npy), plus README.txt, which says how those losses were made. There is no
losses_2p.npy: Paddle synchronises batch norm across GPUs only (NCCL), not across CPU places.

The reference losses do not come from sync_batch_norm's own kernel: Paddle 2.6.2 has none on
the CPU. Its CPU wheel does not even register the op (building the program fails with
'Operator "sync_batch_norm" has not been registered'), and its GPU wheel, which registers the
op and its grad maker, only has GPU kernels ("There are no kernels which are registered in
the sync_batch_norm operator" on CPUPlace). On one place sync_batch_norm is batch_norm
(the batch's statistics are the one place's statistics), so losses_1p.npy is Paddle's CPU
run of the SAME saved main.pb with its sync_batch_norm / sync_batch_norm_grad ops renamed to
batch_norm / batch_norm_grad in a copy (attributes and slots unchanged, except that each
forward op gets a ReserveSpace output, which Paddle's CPU batch_norm kernel must write and
sync_batch_norm does not have; the copy is not saved). main.pb keeps the original
sync_batch_norm ops. The same losses, bit for bit, come from Paddle's CPU wheel running that
copy with params/, and from the model built with nn.BatchNorm2D in place of nn.SyncBatchNorm.

How the saved ops differ from batch_norm's (Paddle 2.6.2): sync_batch_norm has batch_norm's
inputs (X, Scale, Bias, Mean, Variance and an empty MomentumTensor) and outputs less
ReserveSpace (Y, MeanOut, VarianceOut, SavedMean, SavedVariance); sync_batch_norm_grad reads
X, Scale, Bias, SavedMean, SavedVariance and Y@GRAD (not batch_norm_grad's MeanOut,
VarianceOut and ReserveSpace) and writes X@GRAD, Scale@GRAD, Bias@GRAD. Both carry the same
attributes as batch_norm (momentum, epsilon, data_layout, is_test, use_global_stats,
trainable_statistics, fuse_with_relu, use_mkldnn and the common op_* ones); op_role_var on
sync_batch_norm_grad lists its Scale and Bias with their gradients.

Run once by hand; the outputs are committed. It needs `pip install paddlepaddle-gpu==2.6.2`
(the GPU wheel, for the op's registration; it imports and runs on CPUPlace on a machine without
a GPU): python scripts/make_paddle_sync_bn_fixture.py [tests/data]
"""
import os
import sys

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle.base.proto import framework_pb2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_paddle_fixture import STEPS, out_dir, write_program  # noqa: E402  (static mode)

SEED, BATCH, IMAGE, CLASSES = 61, 16, (3, 8, 8), 10
RENAMED = {"sync_batch_norm": "batch_norm", "sync_batch_norm_grad": "batch_norm_grad"}


def sync_bn_batch(seed):
    """A learnable batch (make_paddle_fixture.training_batch's, of BATCH rows): class c
    brightens one band of the image."""
    rng = np.random.default_rng(seed)
    label = rng.integers(0, CLASSES, size=(BATCH, 1)).astype("int64")
    image = rng.uniform(0, 0.2, size=(BATCH,) + IMAGE).astype("float32")
    flat = image.reshape(BATCH, -1)
    band = flat.shape[1] // CLASSES
    for i in range(BATCH):
        flat[i, label[i, 0] * band:(label[i, 0] + 1) * band] += 1.0
    return image, label


def build(main, startup):
    """The CNN; returns (loss, per-sample loss)."""
    nn = paddle.nn
    with paddle.static.program_guard(main, startup):
        image = paddle.static.data("image", (-1,) + IMAGE, "float32")
        label = paddle.static.data("label", [-1, 1], "int64")
        h = F.relu(nn.SyncBatchNorm(8)(nn.Conv2D(3, 8, 3, padding=1, bias_attr=False)(image)))
        h = F.relu(nn.SyncBatchNorm(8)(nn.Conv2D(8, 8, 3, stride=2, bias_attr=False)(h)))
        logits = nn.Linear(8, CLASSES)(paddle.flatten(nn.AdaptiveAvgPool2D(1)(h), 1))
        per_sample = F.cross_entropy(logits, label, reduction="none")
        loss = paddle.mean(per_sample)
        paddle.optimizer.Momentum(learning_rate=0.05, momentum=0.9).minimize(loss)
    return loss, per_sample


def as_batch_norm(serialized):
    """A copy of the serialised program with sync_batch_norm(_grad) renamed batch_norm(_grad).
    The one other change: each renamed forward op gets the ReserveSpace output that
    sync_batch_norm lacks and Paddle's CPU batch_norm kernel writes (a new temporary,
    <Y>.reserve_space, described as SavedMean is); batch_norm_grad runs without the MeanOut,
    VarianceOut and ReserveSpace inputs (it reads them only for use_global_stats)."""
    desc = framework_pb2.ProgramDesc.FromString(serialized)
    for block in desc.blocks:
        var = {v.name: v for v in block.vars}
        for op in block.ops:
            if op.type == "sync_batch_norm":
                slots = {v.parameter: v.arguments for v in op.outputs}
                reserve = framework_pb2.VarDesc()
                reserve.CopyFrom(var[slots["SavedMean"][0]])
                reserve.name = slots["Y"][0] + ".reserve_space"
                block.vars.append(reserve)
                op.outputs.add(parameter="ReserveSpace", arguments=[reserve.name])
            op.type = RENAMED.get(op.type, op.type)
    return desc.SerializeToString()


def sync_bn_listing(serialized):
    """Lines naming each sync_batch_norm(_grad) op's slots and attributes as saved."""
    lines = []
    for op in framework_pb2.ProgramDesc.FromString(serialized).blocks[0].ops:
        if op.type not in RENAMED:
            continue
        lines.append(op.type)
        lines.append("  inputs:  " + ", ".join(f"{v.parameter}={list(v.arguments)}" for v in op.inputs))
        lines.append("  outputs: " + ", ".join(f"{v.parameter}={list(v.arguments)}" for v in op.outputs))
        attrs = {}
        for a in op.attrs:
            kind = framework_pb2.AttrType.Name(a.type)
            attrs[a.name] = {"INT": a.i, "FLOAT": a.f, "STRING": a.s, "BOOLEAN": a.b,
                             "STRINGS": list(a.strings)}.get(kind, kind)
        lines.append("  attrs:   " + ", ".join(f"{k}={attrs[k]!r}" for k in sorted(attrs)))
    return lines


def losses_1p(exe, program, per_sample, feed):
    """Paddle's losses of STEPS steps of `program` on 1 CPU place (the scope's startup has run):
    the mean of the per-sample losses, as make_paddle_fixture.losses records them."""
    return np.array([float(np.mean(exe.run(program, feed=feed, fetch_list=[per_sample])[0]))
                     for _ in range(STEPS)], dtype="float32")


README = """\
Paddle 2.6.2's static-graph training program of a small CNN with paddle.nn.SyncBatchNorm
(written by scripts/make_paddle_sync_bn_fixture.py; see its docstring): main.pb holds
Paddle's own sync_batch_norm and sync_batch_norm_grad ops, startup.pb and params/ its
initialisation and initial persistables, image.npy and label.npy the batch, loss_name.txt the
loss's name.

losses_1p.npy: {steps} steps on 1 CPU place, each the mean of the per-sample losses. Paddle
2.6.2 has no CPU kernel for sync_batch_norm (its CPU wheel does not register the op, its GPU
wheel has GPU kernels only), so these are Paddle's CPU losses of this same main.pb with its
sync_batch_norm / sync_batch_norm_grad ops renamed batch_norm / batch_norm_grad in a copy
(attributes and slots unchanged, except a ReserveSpace output added to each forward op, which
the CPU batch_norm kernel writes): on one place synchronised batch norm is batch norm. There is
no losses_2p.npy: Paddle synchronises batch norm across GPUs only, not across CPU places.

The sync_batch_norm ops as saved in main.pb:
{listing}
"""


def sync_bn_fixture(d):
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = SEED
    with paddle.utils.unique_name.guard():
        loss, per_sample = build(main, startup)
    print("ops:", [op.type for op in main.global_block().ops])
    os.makedirs(os.path.join(d, "params"), exist_ok=True)
    for part, program in (("startup", startup), ("main", main)):
        write_program(os.path.join(d, part + ".pb"), program)
    with open(os.path.join(d, "main.pb"), "rb") as f:
        saved = f.read()
    converted = paddle.static.Program.parse_from_string(as_batch_norm(saved))
    image, label = sync_bn_batch(SEED)
    feed = {"image": image, "label": label}
    exe = paddle.static.Executor(paddle.CPUPlace())
    with paddle.static.scope_guard(paddle.static.Scope()):
        exe.run(startup)
        paddle.distributed.io.save_persistables(exe, os.path.join(d, "params"), main)
        losses = losses_1p(exe, converted, per_sample.name, feed)
    for name, value in feed.items():
        np.save(os.path.join(d, name + ".npy"), value)
    np.save(os.path.join(d, "losses_1p.npy"), losses)
    with open(os.path.join(d, "loss_name.txt"), "w") as f:
        f.write(loss.name + "\n")
    listing = sync_bn_listing(saved)
    with open(os.path.join(d, "README.txt"), "w") as f:
        f.write(README.format(steps=STEPS, listing="\n".join(listing)))
    print("\n".join(listing))
    print(os.path.basename(d), loss.name, losses[[0, -1]])
    print("losses:", losses.tolist())


if __name__ == "__main__":
    sync_bn_fixture(os.path.join(out_dir, "paddle_sync_bn"))
