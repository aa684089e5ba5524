"""The step timing of the Python baselines (bench/paddle_programs_paddle.py and
bench/paddle_programs_torch.py, each run by its own interpreter): a few warm-up steps, then
`repetitions` runs of `steps` steps; the median seconds per step."""
import statistics
import time


def median_seconds_per_step(step, steps, repetitions, warmup=3):
    for _ in range(warmup):  # kernels chosen, memory allocated
        step()
    times = []
    for _ in range(repetitions):
        start = time.perf_counter()
        for _ in range(steps):
            step()
        times.append((time.perf_counter() - start) / steps)
    return statistics.median(times)
