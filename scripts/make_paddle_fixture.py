"""Writes tests/data/paddle_mlp_{startup,main}.pb: an MLP training program built and
saved by PaddlePaddle itself (static graph API), so the tests prove we load what Paddle writes.

Run once by hand (needs `pip install paddlepaddle==2.6.2`); the outputs are committed.
"""
import os
import sys

import paddle

paddle.enable_static()
out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "data")

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
