"""How fast the CLI answers: whole-process time of one plan, and --queries plans per second.

Run: .venv/bin/python benchmarks/bench_cli.py [--runs 5] [--queries 2000]

Prints, next to the figures issue #12 started from (an idle 2-core machine, before the layout
work): the whole process ``rigwise infer llama-3.1-8b --on rtx-4090`` (best of N runs, and the
import time of the modules it loads), and the ``--queries`` rate of inference and training plans
(levers off, as a sweep would run them). The machine's load is printed too: on a shared, busy
machine every figure is slower than on the idle one the targets are for.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OLD = {"process_s": 0.33, "infer_plans_per_s": 3000.0, "train_plans_per_s": 620.0}
TARGET = {"process_s": 0.150, "infer_plans_per_s": 20_000.0, "train_plans_per_s": 5_000.0}
COMMAND = ["-m", "rigwise", "infer", "llama-3.1-8b", "--on", "rtx-4090"]


def _python() -> str:
    return sys.executable


def process_seconds(runs: int) -> float:
    """Best wall time of ``runs`` whole processes (what a user waits for)."""
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([_python(), *COMMAND], check=False, capture_output=True)
        best = min(best, time.perf_counter() - start)
    return best


def bare_python_seconds(runs: int, code: str = "pass") -> float:
    """Best wall time of ``python -c CODE``: the start-up floor under the CLI."""
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([_python(), "-c", code], check=True, capture_output=True)
        best = min(best, time.perf_counter() - start)
    return best


# What `rigwise infer` cannot do without: the CLI framework, the options' validation
# (InferOptions is a pydantic model) and the table renderer.
FLOOR_IMPORTS = "import click, pydantic, rich.console, rich.table"


def import_seconds() -> list[tuple[float, str]]:
    """The slowest imports of one run (``python -X importtime``), cumulative seconds."""
    result = subprocess.run(
        [_python(), "-X", "importtime", *COMMAND], check=False, capture_output=True, text=True
    )
    rows = []
    for line in result.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]) / 1e6, parts[2].rstrip()))
    return sorted(rows, reverse=True)[:8]


def queries_rate(command: str, lines: list[dict[str, object]]) -> float:
    """Plans per second of ``rigwise COMMAND --queries FILE`` (start-up subtracted)."""
    with tempfile.TemporaryDirectory(prefix="rigwise-bench-") as folder:
        path = Path(folder) / "queries.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
        start = time.perf_counter()
        subprocess.run(
            [_python(), "-m", "rigwise", command, "--queries", str(path)],
            check=False,
            capture_output=True,
        )
        total = time.perf_counter() - start
        start = time.perf_counter()
        one = path.with_name("one.jsonl")
        one.write_text(json.dumps(lines[0]) + "\n", encoding="utf-8")
        subprocess.run(
            [_python(), "-m", "rigwise", command, "--queries", str(one)],
            check=False,
            capture_output=True,
        )
        startup = time.perf_counter() - start
    return (len(lines) - 1) / max(total - startup, 1e-9)


def _infer_lines(count: int) -> list[dict[str, object]]:
    models = ("llama-3.1-8b", "llama-3.1-70b", "qwen2.5-7b", "mistral-7b")
    devices = ("rtx-4090", "2x rtx-3090", "h100-sxm", "m3-max-40c-128gb")
    return [
        {
            "model": models[i % len(models)],
            "on": devices[(i // 4) % len(devices)],
            "prompt": 256 + (i % 16) * 64,
            "gen": 128,
            "levers": False,
        }
        for i in range(count)
    ]


def _train_lines(count: int) -> list[dict[str, object]]:
    return [
        {
            "model": "llama-3.1-8b",
            "on": "8x h100-sxm",
            "global_batch": 8 * (1 + i % 8),
            "seq": 2048,
            "zero": i % 4,
        }
        for i in range(count)
    ]


def _load() -> str:
    """1, 5 and 15 minute load averages (a busy machine makes every figure slower)."""
    if not hasattr(os, "getloadavg"):
        return "n/a"
    return " / ".join(f"{value:.2f}" for value in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="whole-process runs (best taken)")
    parser.add_argument("--queries", type=int, default=2000, help="plans per --queries file")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores, load average {_load()} (targets: idle 2-core)")
    new = {
        "process_s": process_seconds(args.runs),
        "infer_plans_per_s": queries_rate("infer", _infer_lines(args.queries)),
        "train_plans_per_s": queries_rate("train", _train_lines(max(args.queries // 4, 50))),
    }
    print(f"load average after the runs: {_load()}")
    print(f"bare python start-up: {bare_python_seconds(args.runs) * 1e3:.0f} ms")
    floor = bare_python_seconds(args.runs, FLOOR_IMPORTS)
    print(f"python + {FLOOR_IMPORTS.removeprefix('import ')}: {floor * 1e3:.0f} ms")
    print(f"{'figure':<22}{'old':>12}{'now':>12}{'target':>12}")
    for key, label, fmt in (
        ("process_s", "infer, whole process", "{:.3f} s"),
        ("infer_plans_per_s", "--queries infer", "{:,.0f}/s"),
        ("train_plans_per_s", "--queries train", "{:,.0f}/s"),
    ):
        cells = [fmt.format(v[key]) for v in (OLD, new, TARGET)]
        print(f"{label:<22}" + "".join(f"{c:>12}" for c in cells))
    print("slowest imports of `rigwise infer` (cumulative):")
    for seconds, name in import_seconds():
        print(f"  {seconds * 1e3:7.0f} ms  {name.strip()}")


if __name__ == "__main__":
    main()
