"""How fast the CLI answers: whole-process time of one plan, and --queries plans per second.

Run: .venv/bin/python benchmarks/bench_cli.py [--runs 5] [--queries 2000] [--repeat 3]

Prints, next to the figures issue #12 started from (an idle 2-core machine, before the layout
work): the whole process ``rigwise infer llama-3.1-8b --on rtx-4090`` (best of N runs, and the
import time of the modules it loads), and the ``--queries`` rate of inference and training plans
(levers off, as a sweep would run them), in full and with ``--fields`` (a typical sweep's few
numbers: only those parts of each plan are turned into JSON). The machine's load is printed
too: on a shared, busy machine every figure is slower than on the idle one the targets are for.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OLD = {"process_s": 0.33, "infer_plans_per_s": 3000.0, "train_plans_per_s": 620.0}
TARGET = {"process_s": 0.150, "infer_plans_per_s": 20_000.0, "train_plans_per_s": 5_000.0}
COMMAND = ["-m", "rigwise", "infer", "llama-3.1-8b", "--on", "rtx-4090"]
# What a sweep typically reads of each plan (`--fields`): the verdict, a speed and its range,
# a latency and the memory.
INFER_FIELDS = (
    "verdict,decode.tokens_per_s,decode.tokens_per_s_interval,serving.tpot_s,memory.total_bytes"
)
TRAIN_FIELDS = "fits,tokens_per_s,tokens_per_s_interval,mfu,step.seconds,memory_per_gpu.total_bytes"


# Children may write bytecode: with PYTHONDONTWRITEBYTECODE set (some shells set it), a
# checkout without .pyc files compiles every module in every run, which is not what a user
# waits for after the first run.
_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _python() -> str:
    return sys.executable


def _timed(args: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds user+sys) of one child process. On a shared machine the CPU
    time is the steadier figure: waiting for a core counts in the wall time only."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([_python(), *args], check=False, capture_output=True, env=_ENV)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu


def best_of(runs: int, args: list[str]) -> tuple[float, float]:
    """Best wall and best CPU time of ``runs`` whole processes (what a user waits for)."""
    times = [_timed(args) for _ in range(runs)]
    return min(t[0] for t in times), min(t[1] for t in times)


# What `rigwise infer` cannot do without: the CLI framework. Its options are a dataclass
# checked without pydantic (rigwise/option_fields.py) and its report is written without rich
# when stdout is not a terminal (cli/plain.py), as here; until then the floor was python +
# click + pydantic + rich (with one pydantic model class: what InferOptions cost), printed
# below for comparison with the figures taken before.
FLOOR_IMPORTS = "import click"
OLD_FLOOR_IMPORTS = "import click, pydantic, rich.console, rich.table"
OLD_FLOOR_MODEL = OLD_FLOOR_IMPORTS + "\nclass Options(pydantic.BaseModel):\n    model: str"


def import_seconds() -> list[tuple[float, str]]:
    """The slowest imports of one run (``python -X importtime``), cumulative seconds."""
    result = subprocess.run(
        [_python(), "-X", "importtime", *COMMAND],
        check=False,
        capture_output=True,
        text=True,
        env=_ENV,
    )
    rows = []
    for line in result.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]) / 1e6, parts[2].rstrip()))
    return sorted(rows, reverse=True)[:8]


def queries_rate(
    command: str, lines: list[dict[str, object]], runs: int, fields: str | None = None
) -> tuple[float, float]:
    """Plans per second of ``rigwise COMMAND --queries FILE [--fields F]`` (start-up
    subtracted: the best
    of ``runs`` of the file and of its first line alone), by wall and by CPU time. A file that
    runs within the start-up's noise of a one-line file is repeated (x10, at most twice) until
    the difference can be told from it: subtracting two near-equal times gave absurd rates."""
    for _ in range(3):
        total, startup = _timed_file(command, lines, runs, fields)
        if min(t - s for t, s in zip(total, startup, strict=True)) >= RESOLUTION_S:
            return tuple(  # type: ignore[return-value]
                (len(lines) - 1) / (t - s) for t, s in zip(total, startup, strict=True)
            )
        lines = lines * 10
    return math.nan, math.nan  # never told apart from the start-up's noise: printed as such


# Best-of start-up times on a shared machine still move by ~20 ms: a file must take this much
# longer than its first line alone for the difference to be read as its plans' time.
RESOLUTION_S = 0.2


def _timed_file(
    command: str, lines: list[dict[str, object]], runs: int, fields: str | None = None
) -> tuple[tuple[float, float], tuple[float, float]]:
    """(best wall, CPU) of the whole file and of its first line alone."""
    extra = [] if fields is None else ["--fields", fields]
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as folder:
        path = Path(folder) / "queries.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
        one = path.with_name("one.jsonl")
        one.write_text(json.dumps(lines[0]) + "\n", encoding="utf-8")
        total = best_of(runs, ["-m", "rigwise", command, "--queries", str(path), *extra])
        startup = best_of(runs, ["-m", "rigwise", command, "--queries", str(one), *extra])
    return total, startup


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


def _infer_lines_distinct(count: int) -> list[dict[str, object]]:
    """A sweep whose lines all differ (the lines above repeat 16 queries): sizes and
    concurrency vary apart from the model and device."""
    models = ("llama-3.1-8b", "llama-3.1-70b", "qwen2.5-7b", "mistral-7b")
    devices = ("rtx-4090", "2x rtx-3090", "h100-sxm", "m3-max-40c-128gb")
    return [
        {
            "model": models[i % len(models)],
            "on": devices[(i // 4) % len(devices)],
            "prompt": 128 + (i * 37) % 4000,
            "gen": 16 + (i * 13) % 500,
            "concurrency": (1, 1, 1, 4, 16)[(i // 16) % 5],
            "levers": False,
        }
        for i in range(count)
    ]


def _train_lines_distinct(count: int) -> list[dict[str, object]]:
    """A sweep whose lines all differ (the lines below repeat 8 queries)."""
    return [
        {
            "model": "llama-3.1-8b",
            "on": ("8x h100-sxm", "4x h100-sxm", "8x a100-sxm-80gb")[i % 3],
            "global_batch": 8 * (1 + (i // 3) % 16),
            "seq": (2048, 1024)[(i // 384) % 2],
            "zero": (i // 48) % 4,
            "micro_batch": (1, 2)[(i // 192) % 2],
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
    parser.add_argument("--repeat", type=int, default=3, help="runs of each --queries file")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores, load average {_load()} (targets: idle 2-core)")
    process = best_of(args.runs, COMMAND)
    trains = max(args.queries // 4, 50)
    infer = queries_rate("infer", _infer_lines(args.queries), args.repeat)
    distinct, trains_distinct = _infer_lines_distinct(args.queries), _train_lines_distinct(trains)
    infer_distinct = queries_rate("infer", distinct, args.repeat)
    train = queries_rate("train", _train_lines(trains), args.repeat)
    train_distinct = queries_rate("train", trains_distinct, args.repeat)
    infer_fields = queries_rate("infer", distinct, args.repeat, INFER_FIELDS)
    train_fields = queries_rate("train", trains_distinct, args.repeat, TRAIN_FIELDS)
    print(f"load average after the runs: {_load()}")
    bare, floor = best_of(args.runs, ["-c", "pass"]), best_of(args.runs, ["-c", FLOOR_IMPORTS])
    old_floor = best_of(args.runs, ["-c", OLD_FLOOR_IMPORTS])
    model = best_of(args.runs, ["-c", OLD_FLOOR_MODEL])
    print(f"bare python start-up: {bare[0] * 1e3:.0f} ms wall, {bare[1] * 1e3:.0f} ms CPU")
    print(
        f"floor, python + click: {floor[0] * 1e3:.0f} ms wall, {floor[1] * 1e3:.0f} ms CPU "
        f"(the old floor, + pydantic, rich: {old_floor[0] * 1e3:.0f} ms wall, "
        f"{old_floor[1] * 1e3:.0f} ms CPU; with one pydantic model class: "
        f"{model[0] * 1e3:.0f} ms wall, {model[1] * 1e3:.0f} ms CPU)"
    )
    print(f"{'figure':<30}{'old':>12}{'now (wall)':>14}{'now (CPU)':>14}{'target':>12}")
    rows = (
        ("infer, whole process", "process_s", process, "{:.3f} s"),
        ("--queries infer", "infer_plans_per_s", infer, "{:,.0f}/s"),
        ("--queries infer, distinct", "infer_plans_per_s", infer_distinct, "{:,.0f}/s"),
        ("  with --fields", "infer_plans_per_s", infer_fields, "{:,.0f}/s"),
        ("--queries train", "train_plans_per_s", train, "{:,.0f}/s"),
        ("--queries train, distinct", "train_plans_per_s", train_distinct, "{:,.0f}/s"),
        ("  with --fields", "train_plans_per_s", train_fields, "{:,.0f}/s"),
    )
    for label, key, now, fmt in rows:
        cells = [
            fmt.format(v) if not math.isnan(v) else "unresolved"
            for v in (OLD[key], now[0], now[1], TARGET[key])
        ]
        widths = (12, 14, 14, 12)
        print(f"{label:<30}" + "".join(f"{c:>{w}}" for c, w in zip(cells, widths, strict=True)))
    print(
        "(distinct: every line differs; the other files repeat 16 and 8 queries, and a line seen "
        "before is answered from its first plan)"
    )
    print(f"--fields: infer {INFER_FIELDS}; train {TRAIN_FIELDS}")
    print("slowest imports of `rigwise infer` (cumulative):")
    for seconds, name in import_seconds():
        print(f"  {seconds * 1e3:7.0f} ms  {name.strip()}")


if __name__ == "__main__":
    main()
