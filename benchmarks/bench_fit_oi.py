"""Speed of two whole-catalog / whole-month answers: ``rigwise fit`` (every catalog model ranked
for one device; issue #16 asks < 1 s) and ``rigwise oi simulate --days 30`` (issue #17 asks
< 10 s).

Run: .venv/bin/python benchmarks/bench_fit_oi.py [--runs 3]
Prints the median wall and CPU seconds over N runs (catalog caches warm for fit, as a running UI
has them; the first, cold call too) and the machine's load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable


def _timed(call: Callable[[], object], runs: int) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        call()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    runs = parser.parse_args().runs
    from rigwise.api.fit import fit_models
    from rigwise.oi.simulate import simulate

    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    cold, _ = _timed(lambda: fit_models(on="rtx-3090"), 1)
    for device in ("rtx-3090", "rtx-4090", "m3-max-128gb"):
        wall, cpu = _timed(lambda d=device: fit_models(on=d, context=8192), runs)  # type: ignore[misc]
        models = len(fit_models(on=device, context=8192).models)
        print(f"fit --on {device:<14} {models} models: {wall:.3f} s wall, {cpu:.3f} s CPU")
    print(f"fit, first call in the process (catalog cold): {cold:.3f} s")
    wall, cpu = _timed(lambda: simulate(days=30, seed=1), runs)
    print(f"oi simulate --days 30 --seed 1: {wall:.2f} s wall, {cpu:.2f} s CPU (target < 10 s)")


if __name__ == "__main__":
    main()
