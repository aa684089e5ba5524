"""Writes tests/data/paddle_slice_tensor_bounds/: an inference model whose slices take their
bounds from tensors, as Paddle 2.6 emits them -- x[j:, :, 1:3] with j a variable (slice with
StartsTensorList: j's INT32 tensor and a filled INT64 one for the constant, the attributes
holding placeholders) and paddle.slice(x, axes=[2], starts=[0], ends=[e]) with e an INT64
variable of -1 (EndsTensorList) -- both flattened and concatenated.

save_inference_model: model.pdmodel; the model has no parameters, so model.pdiparams is an
empty file; x.npy, the input [2, 3, 4]; output_0.npy, Paddle's output on it.

Run once by hand (needs `pip install paddlepaddle==2.6.2`); the outputs are committed.
"""
import os

import numpy as np
import paddle

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "paddle_slice_tensor_bounds")


def main():
    paddle.enable_static()
    program, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(program, startup):
        x = paddle.static.data("x", [-1, 3, 4], "float32")
        j = paddle.full([1], 1, "int32")
        z = x[j:, :, 1:3]
        e = paddle.full([1], -1, "int64")
        w = paddle.slice(x, axes=[2], starts=[0], ends=[e])
        out = paddle.concat([paddle.flatten(z), paddle.flatten(w)])
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    x_value = np.arange(2 * 3 * 4, dtype="float32").reshape(2, 3, 4)
    (value,) = exe.run(program, feed={"x": x_value}, fetch_list=[out])
    os.makedirs(OUT, exist_ok=True)
    paddle.static.save_inference_model(os.path.join(OUT, "model"), [x], [out], exe, program=program)
    open(os.path.join(OUT, "model.pdiparams"), "wb").close()
    np.save(os.path.join(OUT, "x.npy"), x_value)
    np.save(os.path.join(OUT, "output_0.npy"), value)


if __name__ == "__main__":
    main()
