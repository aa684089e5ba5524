"""Programs from every source a Paddle user has, and the built-in models (no Paddle needed)."""
import pathlib

import numpy as np
import pytest

import pe_actor
from conftest import DATA_DIR

MAIN_PB = DATA_DIR / "paddle_mlp_cross_entropy2" / "main.pb"


class PaddleProgram:
    """What a Paddle Program looks like to pe_actor: desc.serialize_to_string()."""
    class Desc:
        def __init__(self, data):
            self.data = data

        def serialize_to_string(self):
            return self.data

    def __init__(self, data):
        self.desc = self.Desc(data)


def test_a_program_comes_from_bytes_a_path_text_or_a_paddle_program():
    data = MAIN_PB.read_bytes()
    programs = [pe_actor.Program(data), pe_actor.Program(bytearray(data)), pe_actor.Program(str(MAIN_PB)),
                pe_actor.Program(MAIN_PB), pe_actor.Program.load(str(MAIN_PB)),
                pe_actor.Program(PaddleProgram(data))]
    text = programs[0].serialize(text=True)
    assert text.startswith(b"blocks {")
    programs.append(pe_actor.Program.parse(text))
    for p in programs:
        assert p.serialize() == data
        assert p.feeds == ["image", "label"]
        assert p.loss == "mean_0.tmp_0"
        assert p.num_ops == programs[0].num_ops > 0
    assert pe_actor.Program(data).accuracy is not None


def test_a_saved_program_reads_back(tmp_path):
    program = pe_actor.Program(MAIN_PB)
    for text in (False, True):
        path = tmp_path / f"main_{text}.pb"
        program.save(str(path), text=text)
        assert pe_actor.Program(path).serialize() == program.serialize()


def test_what_is_not_a_program_is_an_error():
    with pytest.raises(pe_actor.Error, match="<bytes>: not a valid"):
        pe_actor.Program.parse(b"\x08\x01\x12garbage")
    with pytest.raises(pe_actor.Error, match="empty"):
        pe_actor.Program(b"")
    with pytest.raises(pe_actor.Error, match="cannot open program file '/nonexistent.pb'"):
        pe_actor.Program("/nonexistent.pb")
    with pytest.raises(TypeError, match="expected a pe_actor.Program"):
        pe_actor.Program(3.5)


def train_model(model, feed, steps):
    train = pe_actor.ParallelExecutor(pe_actor.cpu_places(2), model.startup, model.main,
                                      loss_name=model.loss)
    test = pe_actor.ParallelExecutor(main_program=model.test, share_vars_from=train)
    losses = [train.run(feed=feed, fetch_list=[model.loss])[0][0] for _ in range(steps)]
    loss, accuracy = test.run(feed=feed, fetch_list=[model.loss, model.accuracy])
    return losses, loss[0], accuracy[0]


def test_the_builtin_mlp_trains():
    model = pe_actor.models.mlp(input_width=20, hidden=[12], classes=3, optimizer="adam",
                                learning_rate=0.01)
    assert (model.image, model.label) == ("image", "label")
    assert model.main.loss == model.loss
    rng = np.random.default_rng(5)
    labels = rng.integers(0, 3, (30, 1), dtype=np.int64)
    images = rng.standard_normal((30, 20), dtype=np.float32) + 2 * labels.astype(np.float32)
    losses, loss, accuracy = train_model(model, {"image": images, "label": labels}, 30)
    assert losses[-1] < losses[0] / 2
    assert loss < losses[0] and accuracy > 0.8


def test_the_builtin_cnn_trains():
    model = pe_actor.models.cnn(channels=[4, 8], fc=[16], optimizer="momentum")
    rng = np.random.default_rng(6)
    feed = {"image": rng.standard_normal((6, 1, 28, 28), dtype=np.float32),
            "label": rng.integers(0, 10, (6, 1), dtype=np.int64)}
    losses, _, accuracy = train_model(model, feed, 8)
    assert losses[-1] < losses[0]
    assert 0 <= accuracy <= 1


def test_model_arguments_are_checked():
    with pytest.raises(pe_actor.Error, match="optimizer"):
        pe_actor.models.mlp(optimizer="rmsprop")
