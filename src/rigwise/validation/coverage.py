"""Held-out coverage of the prediction ranges: each independent row against a range its own
device never set, with width factors calibrated without its device's cases.

For every device (a torchtitan table for the torchtitan rows) the regime table is rebuilt
without its rows (leave one device out), and its rows are checked against the range a plan
would get there: back-off, widening and the device factor included. The width factors are
calibrated on held-out cases (``validation/widening.py``); a device's rows are scored with
factors calibrated on the *other* devices' cases only (leave one device out of the
calibration too), since factors fitted to bring a device's own cases to 80 % would report the
80 % they were fitted to. (Its rows still sit in the tables the other devices' cases were
held out against, as they would for a plan on a new device.) ``fit`` rows are checked against
the full table and the shipped factors (they never enter the table, but they did set the
model's factors, so their coverage is in-sample).

Coverage is reported per regime ``metric|engine|device class`` (precision and scale pooled:
coarse enough to hold rows from several devices) and, as detail, per full regime. A regime is
*judged* against the 80 % +- 5 % target only with ``JUDGE_ROWS`` rows from ``JUDGE_DEVICES``
devices: with one or two devices a held-out figure says how two devices differ, not how well
a range covers, and below 20 rows one row moves coverage by 5 %; such regimes say so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from rigwise.estimate.intervals import (
    Regime,
    RegimeRange,
    Widths,
    interval_for,
    packaged_widths,
)
from rigwise.validation.intervals import TARGET, in_scope, table_from
from rigwise.validation.stats import Comparison
from rigwise.validation.widening import WideningFit, factors, fit_cases, held_out_cases

JUDGE_ROWS = 20
JUDGE_DEVICES = 3
BAND = 0.05


def _inside(table: dict[str, RegimeRange], c: Comparison, widths: Widths) -> bool | None:
    found = interval_for(table, Regime(*c.regime.split("|")), c.devices, widths)
    if found is None:
        return None
    return found.low_factor <= math.exp(c.log_residual) <= found.high_factor


def annotate(comparisons: Sequence[Comparison]) -> list[Comparison]:
    """Each comparison with ``inside`` set: held out by device for independent rows, scored
    with width factors calibrated without that device's cases (module docstring)."""
    full = table_from(comparisons)
    cases = held_out_cases(comparisons)
    tables: dict[str, dict[str, RegimeRange]] = {}
    fits: dict[str, list[WideningFit]] = {}
    out: list[Comparison] = []
    for c in comparisons:
        if not c.regime:
            out.append(c)
            continue
        metric = c.regime.split("|")[0]
        if c.role == "independent":
            if c.group not in tables:
                tables[c.group] = table_from([x for x in comparisons if x.group != c.group])
                fits[c.group] = fit_cases(cases, without=c.group)
            inside = _inside(tables[c.group], c, factors(fits[c.group], metric))
        else:
            inside = _inside(full, c, packaged_widths(metric))
        out.append(replace(c, inside=inside))
    return out


@dataclass(frozen=True)
class RegimeCoverage:
    regime: str
    rows: int
    covered: int
    devices: int
    in_scope: bool

    @property
    def coverage(self) -> float:
        return self.covered / self.rows if self.rows else math.nan

    @property
    def judged(self) -> bool:
        enough = self.rows >= JUDGE_ROWS and self.devices >= JUDGE_DEVICES
        return self.in_scope and enough

    @property
    def within_target(self) -> bool | None:
        return abs(self.coverage - TARGET) <= BAND if self.judged else None

    def note(self) -> str:
        if not self.in_scope:
            return "out of scope: 2023 llama.cpp builds"
        if self.judged:
            return "" if self.within_target else "outside 75-85 %"
        return (
            f"too few to measure coverage ({self.rows} rows from {self.devices} device(s); "
            f"judged from {JUDGE_ROWS} rows from {JUDGE_DEVICES} devices)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "regime": self.regime,
            "rows": self.rows,
            "devices": self.devices,
            "covered": self.covered,
            "coverage": self.coverage,
            "in_scope": self.in_scope,
            "judged": self.judged,
            "within_target": self.within_target,
            "note": self.note(),
        }


def coverage_by_regime(annotated: Sequence[Comparison], fields: int = 3) -> list[RegimeCoverage]:
    """Held-out coverage of the independent rows per regime cut to its first ``fields`` parts
    (3: metric|engine|device class; 5: the full regime); in-scope regimes first."""
    groups: dict[tuple[str, bool], list[Comparison]] = {}
    for c in annotated:
        if c.role != "independent" or c.inside is None:
            continue
        key = "|".join(c.regime.split("|")[:fields])
        groups.setdefault((key, in_scope(c)), []).append(c)
    return [
        RegimeCoverage(
            regime,
            len(rows),
            sum(bool(c.inside) for c in rows),
            len({c.group for c in rows}),
            scope,
        )
        for (regime, scope), rows in sorted(groups.items(), key=lambda k: (not k[0][1], k[0][0]))
    ]


def overall(annotated: Sequence[Comparison]) -> tuple[int, int]:
    """(covered, rows) over every in-scope independent row with a range."""
    rows = [c for c in annotated if c.role == "independent" and c.inside is not None]
    rows = [c for c in rows if in_scope(c)]
    return sum(bool(c.inside) for c in rows), len(rows)
