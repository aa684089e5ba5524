"""A program saved by Paddle 2.6.2 itself (tests/data/paddle_mlp_cross_entropy2, written by
scripts/make_paddle_fixture.py; no paddle import here), trained from Paddle's parameter files on
one fixed batch: the losses from Python equal pe-actor-run's on the same data and Paddle's own."""
import json
import os
import subprocess

import numpy as np
import pytest

import pe_actor
from conftest import DATA_DIR

FIXTURE = DATA_DIR / "paddle_mlp_cross_entropy2"
STEPS = 20


def python_losses(places):
    exe = pe_actor.ParallelExecutor(pe_actor.cpu_places(places), str(FIXTURE / "startup.pb"),
                                    (FIXTURE / "main.pb").read_bytes(),
                                    loss_name=(FIXTURE / "loss_name.txt").read_text().strip())
    exe.load_params(str(FIXTURE / "params"))
    feed = {"image": np.load(FIXTURE / "image.npy"), "label": np.load(FIXTURE / "label.npy")}
    return [float(exe.run(feed=feed, fetch_list=[exe.loss_name])[0][0]) for _ in range(STEPS)]


def cli_losses(places, tmp_path):
    binary = os.environ.get("PE_RUN_BINARY")
    if not binary:
        pytest.fail("PE_RUN_BINARY (pe-actor-run of this build) is not set; ctest sets it")
    metrics = tmp_path / f"metrics_{places}.json"
    # npy:DIR reads DIR/<feed>.npy: the fixture's image.npy and label.npy, one batch of 8.
    subprocess.run([binary, "--model", str(FIXTURE / "main.pb"), "--startup", str(FIXTURE / "startup.pb"),
                    "--load-params", str(FIXTURE / "params"), "--data", f"npy:{FIXTURE}",
                    "--batch-size", "8", "--steps", str(STEPS), "--places", f"cpu:{places}",
                    "--metrics", str(metrics)],
                   check=True, capture_output=True)
    return [s["loss"] for s in json.loads(metrics.read_text())["steps"]]


@pytest.mark.parametrize("places", [1, 2])
def test_paddle_program_trains_with_the_clis_and_paddles_losses(places, tmp_path):
    ours = python_losses(places)
    cli = cli_losses(places, tmp_path)
    paddle = np.load(FIXTURE / f"losses_{places}p.npy")
    assert len(cli) == STEPS
    # The CLI visits the batch's 8 rows in a shuffled order every epoch (here every step), so
    # its sums run in another order: equal up to float rounding, far below a step's change.
    np.testing.assert_allclose(ours, cli, rtol=2e-6)
    np.testing.assert_allclose(ours, paddle, rtol=1e-4)
    assert ours[-1] < ours[0] / 10
