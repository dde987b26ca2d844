"""Prediction ranges from independent rows: the table, and its held-out coverage.

``rigwise validate intervals`` predicts every packaged measurement, keeps the ``independent``
rows, and computes per regime the split-conformal P10-P90 of ``ln(measured / predicted)``
(``estimate/intervals.py``). ``--write`` stores that table in
``catalog/data/prediction_intervals.csv`` with its provenance, so plans pay nothing at run time.

Coverage is held out by hardware: for each device (group) the table is rebuilt without that
device's rows and its rows are checked against the range a plan would get (back-off and
widening included). A row's own measurement never sets its range. ``fit`` rows are checked
against the full table (they never enter it, but they did set the model's factors).
Rows of 2023 llama.cpp builds stay out of the table: rigwise models current builds; their
coverage is reported apart as out of scope.
"""

from __future__ import annotations

import datetime
import math
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rigwise.estimate.intervals import (
    FIELDS,
    MIN_ROWS,
    TABLE_FILE,
    Regime,
    RegimeRange,
    build_table,
    interval_for,
    packaged_widening,
)
from rigwise.validation.stats import Comparison

OUT_OF_SCOPE = ("Dec 2023 build",)  # source suffixes kept out of the table (see docstring)
TARGET = 0.80


def in_scope(c: Comparison) -> bool:
    return not any(marker in c.source for marker in OUT_OF_SCOPE)


def _pool(comparisons: Sequence[Comparison]) -> list[tuple[Regime, float, str, int, str]]:
    return [
        (Regime(*c.regime.split("|")), c.log_residual, c.group, c.devices, c.source)
        for c in comparisons
        if c.role == "independent" and c.regime and in_scope(c)
    ]


def table_from(comparisons: Sequence[Comparison]) -> dict[str, RegimeRange]:
    return build_table(_pool(comparisons))


def _inside(table: dict[str, RegimeRange], c: Comparison) -> tuple[bool | None, str]:
    regime = Regime(*c.regime.split("|"))
    found = interval_for(table, regime, c.devices, *packaged_widening(regime.metric))
    if found is None:
        return None, ""
    ratio = math.exp(c.log_residual)
    return found.low_factor <= ratio <= found.high_factor, found.basis


def annotate(comparisons: Sequence[Comparison]) -> list[Comparison]:
    """Each comparison with ``inside`` set: held out by device for independent rows."""
    full = table_from(comparisons)
    by_group: dict[str, dict[str, RegimeRange]] = {}
    out: list[Comparison] = []
    for c in comparisons:
        if not c.regime:
            out.append(c)
            continue
        if c.role == "independent":
            if c.group not in by_group:
                by_group[c.group] = table_from([x for x in comparisons if x.group != c.group])
            inside, _ = _inside(by_group[c.group], c)
        else:
            inside, _ = _inside(full, c)
        out.append(replace(c, inside=inside))
    return out


@dataclass(frozen=True)
class RegimeCoverage:
    regime: str
    rows: int
    covered: int
    in_scope: bool

    @property
    def coverage(self) -> float:
        return self.covered / self.rows if self.rows else math.nan

    def to_dict(self) -> dict[str, Any]:
        return {
            "regime": self.regime,
            "rows": self.rows,
            "covered": self.covered,
            "coverage": self.coverage,
            "in_scope": self.in_scope,
            "within_target": abs(self.coverage - TARGET) <= 0.05 if self.rows else None,
        }


def coverage_by_regime(annotated: Sequence[Comparison]) -> list[RegimeCoverage]:
    """Held-out coverage of the independent rows, per the regime a plan would be given."""
    full = table_from(annotated)
    groups: dict[tuple[str, bool], list[bool]] = {}
    for c in annotated:
        if c.role != "independent" or c.inside is None:
            continue
        _, basis = _inside(full, c)
        groups.setdefault((basis or c.regime, in_scope(c)), []).append(c.inside)
    return [
        RegimeCoverage(regime, len(flags), sum(flags), scope)
        for (regime, scope), flags in sorted(groups.items(), key=lambda k: (not k[0][1], k[0][0]))
    ]


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
    target.write_text(table_text(table_from(comparisons), len(_pool(comparisons))), "utf-8")
    return target


LATENCY_METRICS = ("ttft", "tpot")
_LATENCY_FALLBACK = {"ttft": "prefill", "tpot": "serving (batched) or decode"}


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
            lines.append(f"  {metric}: {d['independent_rows']} independent rows: own regimes")
            continue
        lines.append(
            f"  {metric}: {d['independent_rows']} independent rows from {d['devices']} device(s); "
            f"a regime needs {MIN_ROWS} from {MIN_GROUPS}: no regime of its own, plans take the "
            f"{d['range_from']} range"
        )
    return "\n".join(lines)
