"""How fast the CLI answers: whole-process time of one plan, and --queries plans per second.

Run: .venv/bin/python benchmarks/bench_cli.py [--runs 5] [--queries 2000] [--repeat 3]
    [--old-src DIR]

Prints, next to the figures issue #12 started from (an idle 2-core machine, before the layout
work): the whole process ``rigwise infer llama-3.1-8b --on rtx-4090`` (best of N runs, and the
import time of the modules it loads), and the ``--queries`` rate of inference and training plans
(levers off, as a sweep would run them), in full and with ``--fields`` (a typical sweep's few
numbers: only those parts of each plan are turned into JSON). The machine's load is printed
too: on a shared, busy machine every figure is slower than on the idle one the targets are for.

The issue's "old" figures were taken on another day's machine. ``--old-src DIR`` measures the tree
they came from on this machine too, in the same run, so old and new compare like for like: DIR is
a checkout of that tree (``git worktree add /tmp/old db1c8da``, the commit before the layout work),
run with this interpreter and ``PYTHONPATH=DIR/src``. Its ``--fields`` rows say n/a: that tree had
no ``--fields``.
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
from collections.abc import Callable
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


def _timed(args: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds user+sys) of one child process. On a shared machine the CPU
    time is the steadier figure: waiting for a core counts in the wall time only."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([_python(), *args], check=False, capture_output=True, env=env or _ENV)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu


def best_of(runs: int, args: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Best wall and best CPU time of ``runs`` whole processes (what a user waits for)."""
    times = [_timed(args, env) for _ in range(runs)]
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
    command: str,
    make_lines: Callable[[int], list[dict[str, object]]],
    count: int,
    runs: int,
    fields: str | None = None,
    env: dict[str, str] | None = None,
) -> tuple[float, float]:
    """Plans per second of ``rigwise COMMAND --queries FILE [--fields F]`` (start-up
    subtracted: the best of ``runs`` of the file and of its first line alone), by wall and by
    CPU time. A file that runs within the start-up's noise of a one-line file is made 10x longer
    (at most twice) until the difference can be told from it: subtracting two near-equal times
    gave absurd rates. The longer file is made by ``make_lines`` too, so a file of distinct lines
    stays distinct (repeating it would answer the copies from their first plans)."""
    for _ in range(3):
        lines = make_lines(count)
        total, startup = _timed_file(command, lines, runs, fields, env)
        if min(t - s for t, s in zip(total, startup, strict=True)) >= RESOLUTION_S:
            return tuple(  # type: ignore[return-value]
                (len(lines) - 1) / (t - s) for t, s in zip(total, startup, strict=True)
            )
        count *= 10
    return math.nan, math.nan  # never told apart from the start-up's noise: printed as such


# Best-of start-up times on a shared machine still move by ~20 ms: a file must take this much
# longer than its first line alone for the difference to be read as its plans' time.
RESOLUTION_S = 0.2


def _timed_file(
    command: str,
    lines: list[dict[str, object]],
    runs: int,
    fields: str | None = None,
    env: dict[str, str] | None = None,
) -> tuple[tuple[float, float], tuple[float, float]]:
    """(best wall, CPU) of the whole file and of its first line alone."""
    extra = [] if fields is None else ["--fields", fields]
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as folder:
        path = Path(folder) / "queries.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
        one = path.with_name("one.jsonl")
        one.write_text(json.dumps(lines[0]) + "\n", encoding="utf-8")
        total = best_of(runs, ["-m", "rigwise", command, "--queries", str(path), *extra], env)
        startup = best_of(runs, ["-m", "rigwise", command, "--queries", str(one), *extra], env)
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
            "gen": 16 + (i * 13) % 500 + i // 4000,  # the rest repeat every 4000 lines
            "concurrency": (1, 1, 1, 4, 16)[(i // 16) % 5],
            "levers": False,
        }
        for i in range(count)
    ]


def _train_lines_distinct(count: int) -> list[dict[str, object]]:
    """A sweep whose lines all differ (the lines below repeat 8 queries); past the first 768
    lines, which cycle through two sequence lengths, each block of 384 takes a length of its own."""
    return [
        {
            "model": "llama-3.1-8b",
            "on": ("8x h100-sxm", "4x h100-sxm", "8x a100-sxm-80gb")[i % 3],
            "global_batch": 8 * (1 + (i // 3) % 16),
            "seq": (2048, 1024)[(i // 384) % 2] if i < 768 else 64 * (i // 384) + 32,
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


_FIGURES = (
    # (label, OLD/TARGET key, command, lines, fields)
    ("infer, whole process", "process_s", None, None, None),
    ("--queries infer", "infer_plans_per_s", "infer", "infer", None),
    ("--queries infer, distinct", "infer_plans_per_s", "infer", "infer_distinct", None),
    ("  with --fields", "infer_plans_per_s", "infer", "infer_distinct", INFER_FIELDS),
    ("--queries train", "train_plans_per_s", "train", "train", None),
    ("--queries train, distinct", "train_plans_per_s", "train", "train_distinct", None),
    ("  with --fields", "train_plans_per_s", "train", "train_distinct", TRAIN_FIELDS),
)


def _figure(
    args: argparse.Namespace,
    spec: tuple[str, str, str | None, str | None, str | None],
    env: dict[str, str] | None,
) -> tuple[float, float]:
    """One figure of one tree: (wall, CPU) seconds for the process, plans/s for the rest."""
    _, _, command, lines_name, fields = spec
    if command is None or lines_name is None:
        return best_of(args.runs, COMMAND, env)
    make_lines = {
        "infer": _infer_lines,
        "infer_distinct": _infer_lines_distinct,
        "train": _train_lines,
        "train_distinct": _train_lines_distinct,
    }[lines_name]
    count = args.queries if command == "infer" else max(args.queries // 4, 50)
    return queries_rate(command, make_lines, count, args.repeat, fields, env)


def _cell(value: float, fmt: str) -> str:
    return fmt.format(value) if not math.isnan(value) else "unresolved"


def _print_floors(runs: int) -> None:
    bare, floor = best_of(runs, ["-c", "pass"]), best_of(runs, ["-c", FLOOR_IMPORTS])
    old_floor = best_of(runs, ["-c", OLD_FLOOR_IMPORTS])
    model = best_of(runs, ["-c", OLD_FLOOR_MODEL])
    print(f"bare python start-up: {bare[0] * 1e3:.0f} ms wall, {bare[1] * 1e3:.0f} ms CPU")
    print(
        f"floor, python + click: {floor[0] * 1e3:.0f} ms wall, {floor[1] * 1e3:.0f} ms CPU "
        f"(the old floor, + pydantic, rich: {old_floor[0] * 1e3:.0f} ms wall, "
        f"{old_floor[1] * 1e3:.0f} ms CPU; with one pydantic model class: "
        f"{model[0] * 1e3:.0f} ms wall, {model[1] * 1e3:.0f} ms CPU)"
    )


def _old_env(old_src: str | None) -> dict[str, str] | None:
    """The environment that runs the old tree with this interpreter, or None (not measured)."""
    if old_src is None:
        return None
    src = Path(old_src) / "src"
    if not (src / "rigwise" / "__init__.py").is_file():
        raise SystemExit(f"--old-src {old_src}: no src/rigwise there; give a checkout of the tree")
    return {**_ENV, "PYTHONPATH": str(src.resolve())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="whole-process runs (best taken)")
    parser.add_argument("--queries", type=int, default=2000, help="plans per --queries file")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each --queries file")
    parser.add_argument(
        "--old-src", default=None, help="a checkout of the old tree, measured here too"
    )
    args = parser.parse_args()
    old_env = _old_env(args.old_src)
    print(f"machine: {os.cpu_count()} cores, load average {_load()} (targets: idle 2-core)")
    measured = []
    for spec in _FIGURES:  # each figure of the old tree right after the new: like for like
        now = _figure(args, spec, None)
        old_here = (math.nan, math.nan)
        if old_env is not None and spec[4] is None:
            old_here = _figure(args, spec, old_env)
        measured.append((spec, now, old_here))
    print(f"load average after the runs: {_load()}")
    _print_floors(args.runs)
    head = f"{'figure':<30}{'old (issue)':>12}"
    head += f"{'old here':>12}" if old_env is not None else ""
    print(head + f"{'now (wall)':>14}{'now (CPU)':>14}{'target':>12}")
    for (label, key, command, _, fields), now, old_here in measured:
        fmt = "{:.3f} s" if command is None else "{:,.0f}/s"
        row = f"{label:<30}{_cell(OLD[key], fmt):>12}"
        if old_env is not None:
            row += f"{'n/a' if fields else _cell(old_here[0], fmt):>12}"
        row += f"{_cell(now[0], fmt):>14}{_cell(now[1], fmt):>14}{_cell(TARGET[key], fmt):>12}"
        print(row)
    print(
        "(distinct: every line differs; the other files repeat 16 and 8 queries, and a line seen "
        "before is answered from its first plan; unresolved: a file 100x longer still ran within "
        f"{RESOLUTION_S} s of one line, too fast to tell from start-up noise)"
    )
    print(f"--fields: infer {INFER_FIELDS}; train {TRAIN_FIELDS}")
    print("slowest imports of `rigwise infer` (cumulative):")
    for seconds, name in import_seconds():
        print(f"  {seconds * 1e3:7.0f} ms  {name.strip()}")


if __name__ == "__main__":
    main()
