"""Training programs that Paddle saved, on 1 and 2 CPU places: the engine (pe-actor-run on the
fixture's main.pb, startup.pb, Paddle's parameters and batch) against Paddle 2.6's own Executor
and ParallelExecutor on the same program and batch, and against PyTorch eager on the same
model (1 thread against 1 place, 2 threads against 2 places), each measured in this run.
scripts/bench.sh runs it; it prints markdown rows of scripts/bench.sh's table (samples/s, the
ratio engine / baseline) and says on stderr what it could not measure. Standard library only:
Paddle and PyTorch run in the interpreters that have them (PE_PADDLE_PYTHON, PE_TORCH_PYTHON,
else the first of python3, /usr/bin/python3 and /var/tmp/paddle-venv/bin/python that imports
them).

    python3 bench/paddle_programs_bench.py PE_ACTOR_RUN [STEPS]

The fixtures are the test fixtures (tests/data/paddle_*): small batches (8 and 16 rows), so
per-step overhead weighs more than it would on a real batch. Every side runs REPETITIONS
times and reports its median (the engine as separate pe-actor-run runs, the baselines as
repetitions after a warm-up in one interpreter).

One more row, the engine alone: the ResNet on 2 places against 1 at SCALING_ROWS rows per
place (its batch repeated to that size), the scaling issue 28 asks of a ResNet-style program
at a batch where each place has work; 1 and 2 places alternate, REPETITIONS rounds, and the
row gives the median of the rounds' ratios.
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile

# Runs per measurement, on every side: each side reports its median.
REPETITIONS = 3
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# (fixture, the model's name in paddle_programs_torch.py, what it is, steps factor): every
# side runs STEPS x factor steps of the program, so that a measurement lasts long enough to
# see the steady state (300 steps of the MLP are ~10 ms on 1 place, where one slow moment of
# the machine decided the cell).
FIXTURES = [
    ("paddle_resnet_small", "resnet_small", "ResNet (3 BasicBlock stages, batch_norm, Momentum)", 1),
    ("paddle_encoder_classifier", "encoder_classifier",
     "BERT-style encoder (2 layers, AdamW, global-norm clip)", 1),
    ("paddle_lr_schedule", "lr_schedule", "MLP with its learning-rate schedule in the program", 20),
]


# The scaling row: rows per place, and the fixture it runs.
SCALING_ROWS = 32
SCALING_FIXTURE = ("paddle_resnet_small", "ResNet (3 BasicBlock stages, batch_norm, Momentum)")


def python_with(module, variable):
    candidates = [os.environ[variable]] if os.environ.get(variable) else \
        ["python3", "/usr/bin/python3", "/var/tmp/paddle-venv/bin/python"]
    for python in candidates:
        try:
            if subprocess.run([python, "-c", f"import {module}"], capture_output=True,
                              timeout=120).returncode == 0:
                return python
        except (OSError, subprocess.TimeoutExpired):
            continue
    return None


def rows_of(fixture):
    # The .npy header is read by hand: this script needs no numpy.
    path = os.path.join(ROOT, "tests", "data", fixture, "label.npy")
    with open(path, "rb") as f:
        header = f.read(256).decode("latin1")
    return int(re.search(r"'shape': \((\d+)", header).group(1))


def ms_per_step(command, env=None):
    out = subprocess.run(command, capture_output=True, text=True, timeout=900,
                         env={**os.environ, **(env or {})})
    found = re.search(r"ms_per_step ([0-9.]+)", out.stdout)
    if out.returncode != 0 or not found:
        raise RuntimeError(f"{' '.join(command)}: {(out.stderr or out.stdout)[-400:]}")
    return float(found.group(1))


def engine_samples_per_sec(binary, fixture, batch, places, steps, data=None):
    """One pe-actor-run on the fixture's program and parameters, fed from `data` (a
    directory of .npy files; the fixture's own batch by default)."""
    d = os.path.join(ROOT, "tests", "data", fixture)
    out = subprocess.run(
        [binary, "--model", f"{d}/main.pb", "--startup", f"{d}/startup.pb", "--load-params",
         f"{d}/params", "--data", f"npy:{data or d}", "--batch-size", str(batch), "--no-shuffle",
         "--places", f"cpu:{places}", "--steps", str(steps)],
        capture_output=True, text=True, timeout=900)
    found = re.search(r"^trained .*?, ([0-9.]+) samples/s", out.stdout + out.stderr, re.M)
    if out.returncode != 0 or not found:
        raise RuntimeError(f"pe-actor-run on {fixture}: {out.stderr[-400:]}")
    return float(found.group(1))


def engine_ms(binary, fixture, batch, places, steps, repetitions=REPETITIONS):
    """The median ms per step of `repetitions` runs of pe-actor-run: the statistic the
    baselines report (step_timing.median_seconds_per_step), so that one run caught by a
    slow moment of the machine weighs no more on either side."""
    return statistics.median(batch / engine_samples_per_sec(binary, fixture, batch, places, steps) * 1e3
                             for _ in range(repetitions))


def repeat_npy(source, target, times):
    """Writes the .npy file `source` with its rows (dim 0) repeated `times` times to
    `target`: version 1.0 files in C order, as the fixtures are, read by hand (no numpy)."""
    with open(source, "rb") as f:
        raw = f.read()
    if raw[:8] != b"\x93NUMPY\x01\x00":
        raise RuntimeError(f"{source}: not a version 1.0 .npy file")
    header_len = int.from_bytes(raw[8:10], "little")
    header = raw[10:10 + header_len].decode("latin1")
    if "'fortran_order': False" not in header:
        raise RuntimeError(f"{source}: not in C order")
    rows = int(re.search(r"'shape': \((\d+)", header).group(1))
    header = re.sub(r"'shape': \(\d+", f"'shape': ({rows * times}", header).rstrip()
    # The data starts at a multiple of 64 bytes, the header ending in a newline.
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(target, "wb") as f:
        f.write(raw[:8] + len(header).to_bytes(2, "little") + header.encode("latin1"))
        f.write(raw[10 + header_len:] * times)


def scaling_row(binary, steps):
    """2 places against 1 on SCALING_FIXTURE at SCALING_ROWS rows per place, alternating."""
    fixture, what = SCALING_FIXTURE
    d = os.path.join(ROOT, "tests", "data", fixture)
    rows = rows_of(fixture)
    batch = 2 * SCALING_ROWS
    if batch % rows != 0:
        raise RuntimeError(f"{fixture}: {batch} rows are not a whole number of its {rows}")
    with tempfile.TemporaryDirectory(prefix="pe-scaling-") as data:
        for name in os.listdir(d):
            if name.endswith(".npy") and not name.startswith("losses"):
                repeat_npy(os.path.join(d, name), os.path.join(data, name), batch // rows)
        one, two, ratios = [], [], []
        for _ in range(REPETITIONS):
            one.append(engine_samples_per_sec(binary, fixture, SCALING_ROWS, 1, steps, data))
            two.append(engine_samples_per_sec(binary, fixture, batch, 2, steps, data))
            ratios.append(two[-1] / one[-1])
    print(f"| Paddle program training step, {what}, {SCALING_ROWS} rows per place (its batch repeated) | "
          f"actor executor, cpu:2 vs cpu:1 (batch {batch} vs {SCALING_ROWS}; median of {REPETITIONS} "
          f"alternating rounds) | {statistics.median(two):.0f} samples/s | {statistics.median(one):.0f} "
          f"samples/s (cpu:1) | {statistics.median(ratios):.2f}x |")


def main():
    binary = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    paddle_python = python_with("paddle", "PE_PADDLE_PYTHON")
    torch_python = python_with("torch", "PE_TORCH_PYTHON")
    if paddle_python is None:
        print("paddle_programs_bench: no Python with paddlepaddle: Paddle rows left out", file=sys.stderr)
    if torch_python is None:
        print("paddle_programs_bench: no Python with torch: PyTorch rows left out", file=sys.stderr)
    one_thread = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    for fixture, torch_name, what, factor in FIXTURES:
        batch = rows_of(fixture)
        fixture_steps = steps * factor
        for places in (1, 2):
            ours = engine_ms(binary, fixture, batch, places, fixture_steps)
            value = f"{batch / ours * 1e3:.0f} samples/s"
            title = f"Paddle program training step, {what}, batch {batch}"
            if paddle_python is not None:
                d = os.path.join(ROOT, "tests", "data", fixture)
                theirs = ms_per_step([paddle_python, os.path.join(ROOT, "bench", "paddle_programs_paddle.py"),
                                      d, str(places), str(max(fixture_steps // 10, 10)), str(REPETITIONS)], one_thread)
                runner = "Executor" if places == 1 else "ParallelExecutor"
                print(f"| {title} | actor executor, cpu:{places} vs Paddle 2.6 {runner}, cpu:{places} (same "
                      f"program and batch) | {value} | {batch / theirs * 1e3:.0f} samples/s (Paddle) | "
                      f"{theirs / ours:.2f}x |")
            if torch_python is not None:
                # torch.set_num_threads bounds torch's own pool, not the OpenBLAS that Debian's
                # torch calls, whose threads take every core unless told (bench/baseline.hpp).
                theirs = ms_per_step([torch_python, os.path.join(ROOT, "bench", "paddle_programs_torch.py"),
                                      torch_name, str(batch), str(places), str(fixture_steps), str(REPETITIONS)],
                                     {"OPENBLAS_NUM_THREADS": str(places), "OMP_NUM_THREADS": str(places)})
                print(f"| {title} | actor executor, cpu:{places} vs PyTorch eager, {places} "
                      f"thread{'s' if places > 1 else ''} (same model) | {value} | "
                      f"{batch / theirs * 1e3:.0f} samples/s (PyTorch) | {theirs / ours:.2f}x |")
            sys.stdout.flush()
    scaling_row(binary, steps)


if __name__ == "__main__":
    main()
