#!/usr/bin/env python3
"""Train a classifier with pe_actor the way Paddle's ParallelExecutor guide does: run the
startup program once, build a train and a test executor sharing the parameters, train, and
print loss and accuracy. Fashion-MNIST (Debian's dataset-fashion-mnist) when it is there,
otherwise a synthetic data set of the same shapes.

PYTHONPATH=build/python /usr/bin/python3 examples/train_fashion_mnist.py [--model mlp|cnn]
    [--epochs 2] [--batch-size 64] [--places 2] [--data /usr/share/datasets/fashion-mnist]
"""
import argparse
import gzip
import pathlib
import time

import numpy as np

import pe_actor


def read_idx(path):
    """An idx file (gzipped or not) as a numpy array: uint8 images [N, 28, 28] or labels [N]."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load_fashion_mnist(directory):
    """(train images, train labels, test images, test labels), images scaled to [0, 1]; None
    when the files are missing."""
    def find(stem):
        return next((p for p in (directory / stem, directory / f"{stem}.gz") if p.exists()), None)

    stems = ["train-images-idx3-ubyte", "train-labels-idx1-ubyte",
             "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"]
    paths = [find(s) for s in stems]
    if None in paths:
        return None
    arrays = [read_idx(p) for p in paths]
    images = [a.reshape(len(a), -1).astype(np.float32) / 255 for a in arrays[0::2]]
    labels = [a.reshape(-1, 1).astype(np.int64) for a in arrays[1::2]]
    return images[0], labels[0], images[1], labels[1]


def synthetic(seed=1, train=8192, test=2048, width=784, classes=10):
    """A learnable stand-in: each class a random prototype, each sample one plus noise."""
    rng = np.random.default_rng(seed)
    prototypes = rng.normal(0, 0.1, (classes, width)).astype(np.float32)

    def draw(n):
        labels = rng.integers(0, classes, (n, 1), dtype=np.int64)
        return prototypes[labels[:, 0]] + rng.normal(0, 1, (n, width)).astype(np.float32), labels

    return (*draw(train), *draw(test))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--places", type=int, default=2)
    parser.add_argument("--data", type=pathlib.Path, default=pathlib.Path("/usr/share/datasets/fashion-mnist"))
    args = parser.parse_args()

    data = load_fashion_mnist(args.data)
    print(f"data: {'Fashion-MNIST from ' + str(args.data) if data else 'synthetic (no Fashion-MNIST found)'}")
    train_x, train_y, test_x, test_y = data or synthetic()

    model = (pe_actor.models.mlp(optimizer="adam", learning_rate=0.001) if args.model == "mlp"
             else pe_actor.models.cnn(optimizer="adam", learning_rate=0.001))
    if args.model == "cnn":  # the CNN's image feed is [-1, 1, 28, 28]
        train_x, test_x = train_x.reshape(-1, 1, 28, 28), test_x.reshape(-1, 1, 28, 28)

    places = pe_actor.cpu_places(args.places)
    exec_strategy = pe_actor.ExecutionStrategy()
    exec_strategy.num_threads = 1  # the op actors only enqueue work: one thread keeps up
    build_strategy = pe_actor.BuildStrategy()
    build_strategy.reduce_strategy = pe_actor.BuildStrategy.ReduceStrategy.AllReduce

    # The train executor runs the startup program once and only once; the test executor
    # shares its places and variables, so it sees the trained parameters.
    train_exe = pe_actor.ParallelExecutor(places, model.startup, model.main, loss_name=model.loss,
                                          build_strategy=build_strategy, exec_strategy=exec_strategy)
    test_exe = pe_actor.ParallelExecutor(main_program=model.test, build_strategy=build_strategy,
                                         share_vars_from=train_exe)

    rng = np.random.default_rng(0)
    step = 0
    for epoch in range(1, args.epochs + 1):
        start = time.perf_counter()
        order = rng.permutation(len(train_x))
        for first in range(0, len(order), args.batch_size):
            rows = order[first:first + args.batch_size]
            feed = {model.image: train_x[rows], model.label: train_y[rows]}
            train_loss, train_acc = train_exe.run(feed=feed, fetch_list=[model.loss, model.accuracy])
            step += 1
            if step % 100 == 0:
                print(f"epoch {epoch} step {step}: loss {train_loss[0]:.4f} accuracy {train_acc[0]:.3f}")
        seconds = time.perf_counter() - start

        loss_sum = acc_sum = 0.0
        for first in range(0, len(test_x), 1000):
            feed = {model.image: test_x[first:first + 1000], model.label: test_y[first:first + 1000]}
            test_loss, test_acc = test_exe.run(feed=feed, fetch_list=[model.loss, model.accuracy])
            rows = len(feed[model.label])
            loss_sum += float(test_loss[0]) * rows
            acc_sum += float(test_acc[0]) * rows
        print(f"epoch {epoch}: {len(order) / seconds:.0f} samples/s; test loss "
              f"{loss_sum / len(test_x):.4f} accuracy {acc_sum / len(test_x):.4f}")


if __name__ == "__main__":
    main()
