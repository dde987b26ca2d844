"""Prediction ranges from independent rows: the table, and its held-out coverage.

``rigwise validate intervals`` predicts every packaged measurement, keeps the ``independent``
rows, and computes per regime the split-conformal P10-P90 of ``ln(measured / predicted)``
(``estimate/intervals.py``). ``--write`` stores that table in
``catalog/data/prediction_intervals.csv`` with its provenance, so plans pay nothing at run time.

Held-out coverage (each device's rows against a table rebuilt without them, with width factors
calibrated without its cases) is in ``validation/coverage.py``.
Rows of 2023 llama.cpp builds stay out of the table: rigwise models current builds; their
coverage is reported apart as out of scope.
"""

from __future__ import annotations

import datetime
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rigwise.estimate.intervals import (
    FIELDS,
    MIN_ROWS,
    TABLE_FILE,
    Regime,
    RegimeRange,
    Row,
    build_table,
)
from rigwise.validation.stats import Comparison

OUT_OF_SCOPE = ("Dec 2023 build",)  # source suffixes kept out of the table (see docstring)
TARGET = 0.80


def in_scope(c: Comparison) -> bool:
    return not any(marker in c.source for marker in OUT_OF_SCOPE)


def pool_rows(comparisons: Sequence[Comparison]) -> list[Row]:
    """The table rows (``estimate.intervals.Row``) of the in-scope independent comparisons."""
    return [
        (Regime(*c.regime.split("|")), c.log_residual, c.group, c.devices, c.source)
        for c in comparisons
        if c.role == "independent" and c.regime and in_scope(c)
    ]


def table_from(comparisons: Sequence[Comparison]) -> dict[str, RegimeRange]:
    return build_table(pool_rows(comparisons))


def _commit() -> str:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            cwd=Path(__file__).parent,
            check=False,
        )
    except OSError:
        return "unknown"
    return done.stdout.strip() or "unknown"


def table_text(table: dict[str, RegimeRange], rows_used: int) -> str:
    """The CSV text of ``prediction_intervals.csv``, with its provenance in the header."""
    today = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# P10-P90 of ln(measured / predicted) (rates; times use the inverse) per regime, from",
        f"# the {rows_used} independent rows of src/rigwise/validation/data (role = independent,",
        "# 2023 llama.cpp builds excluded); split-conformal ranks; a regime needs "
        f"{MIN_ROWS} rows.",
        "# '*' = any (back-off levels). Written by `rigwise validate intervals --write` on "
        f"{today} from commit {_commit()} (plus uncommitted changes, if any).",
        ",".join((*FIELDS, "rows", "groups", "log_q10", "log_q90", "max_devices", "sources")),
    ]
    for key in sorted(table):
        r = table[key]
        values = [getattr(r.regime, f) for f in FIELDS]
        sources = r.sources.replace('"', "'")
        lines.append(
            ",".join(values)
            + f",{r.rows},{r.groups},{r.log_q10:.4f},{r.log_q90:.4f},{r.max_devices},"
            + f'"{sources}"'
        )
    return "\n".join(lines) + "\n"


def write_table(comparisons: Sequence[Comparison], path: Path | None = None) -> Path:
    from rigwise.catalog.loader import data_path

    target = path or data_path(TABLE_FILE)
    target.write_text(table_text(table_from(comparisons), len(pool_rows(comparisons))), "utf-8")
    return target


LATENCY_METRICS = ("ttft", "tpot")
_LATENCY_FALLBACK = {"ttft": "prefill", "tpot": "serving (batched) or decode"}
_PLANS_TAKE = {  # what estimate/plan_intervals.py does with them
    "ttft": "a plan whose engine and device class have TTFT rows takes them, others the "
    "prefill range",
    "tpot": "plans still take the serving (batched) or decode range",
}


def latency_regimes(comparisons: Sequence[Comparison]) -> dict[str, Any]:
    """Whether TTFT/TPOT have enough independent serving rows for regimes of their own.

    They need what any regime needs (``MIN_ROWS`` rows from ``MIN_GROUPS`` devices); until then
    a plan's TTFT range is its prefill range and its TPOT range its serving (batched) or decode
    range (``estimate/plan_intervals.py``), and this says so.
    """
    from rigwise.estimate.intervals import MIN_GROUPS

    out: dict[str, Any] = {}
    for metric in LATENCY_METRICS:
        rows = [c for c in comparisons if c.metric == metric and c.role == "independent"]
        groups = {c.group for c in rows}
        enough = len(rows) >= MIN_ROWS and len(groups) >= MIN_GROUPS
        out[metric] = {
            "independent_rows": len(rows),
            "devices": len(groups),
            "own_regimes": enough,
            "range_from": metric if enough else _LATENCY_FALLBACK[metric],
        }
    return out


def latency_text(comparisons: Sequence[Comparison]) -> str:
    from rigwise.estimate.intervals import MIN_GROUPS

    lines = ["", "TTFT / TPOT:"]
    for metric, d in latency_regimes(comparisons).items():
        if d["own_regimes"]:
            lines.append(
                f"  {metric}: {d['independent_rows']} independent rows: own regimes; "
                + _PLANS_TAKE[metric]
            )
            continue
        lines.append(
            f"  {metric}: {d['independent_rows']} independent rows from {d['devices']} device(s); "
            f"a regime needs {MIN_ROWS} from {MIN_GROUPS}: no regime of its own, plans take the "
            f"{d['range_from']} range"
        )
    return "\n".join(lines)
