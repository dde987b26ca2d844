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

Leaving a device out is the question a plan on a *new* device asks. A regime of one or two
devices then always backs off to a broader pool (another engine's or device class's rows):
its coverage says how that pool fits it, not how its own range does. Each row is therefore
also scored *seen*: against the full table without that row only (leave one row out, same
width factors), the range a plan on a validated device gets.

Coverage is reported per regime ``metric|engine|device class`` (precision and scale pooled:
coarse enough to hold rows from several devices) and, as detail, per full regime, with the
binomial standard deviation of a coverage of 80 % over its rows, sqrt(0.16 / n). A regime is
*judged* against the 80 % +- 5 % target only where that sd is at most 5 % (``JUDGE_ROWS``, 64
rows) from ``JUDGE_DEVICES`` devices; the others say how far chance alone moves them. Rows of
one device err together (the intra-device correlation of inside/outside, ``rho``, estimated
over all held-out rows): a regime of n rows in devices of m_g rows is worth n / (1 + (sum m_g^2
/ n - 1) rho) independent rows, and the 2-sd test of "is this a miss or chance" uses that.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from rigwise.estimate.intervals import (
    Regime,
    RegimeRange,
    Row,
    Widths,
    interval_for,
    level_keys,
    packaged_widths,
    pools_of,
    range_of,
)
from rigwise.validation.intervals import TARGET, in_scope, pool_rows, table_from
from rigwise.validation.stats import Comparison
from rigwise.validation.widening import WideningFit, factors, fit_cases, held_out_cases

BAND = 0.05
SPREAD = TARGET * (1 - TARGET)  # variance of one row's inside (1) / outside (0) at 80 %
JUDGE_ROWS = math.ceil(SPREAD / BAND**2)  # 64: sd of coverage over n rows, sqrt(.16 / n), <= 5 %
JUDGE_DEVICES = 3


def _inside(table: dict[str, RegimeRange], c: Comparison, widths: Widths) -> bool | None:
    found = interval_for(table, Regime(*c.regime.split("|")), c.devices, widths)
    if found is None:
        return None
    return found.low_factor <= math.exp(c.log_residual) <= found.high_factor


def _row(c: Comparison) -> Row:
    return pool_rows([c])[0]


def _without_row(
    full: dict[str, RegimeRange], pools: dict[str, list[Row]], c: Comparison
) -> dict[str, RegimeRange]:
    """``full`` without the row of ``c``: only the pools of its back-off keys change."""
    if not in_scope(c):
        return full
    row = _row(c)
    table = dict(full)
    for key in level_keys(row[0]):
        pool = list(pools[key])
        pool.remove(row)
        found = range_of(key, pool)
        if found is None:
            table.pop(key, None)
        else:
            table[key] = found
    return table


def annotate(comparisons: Sequence[Comparison]) -> list[Comparison]:
    """Each comparison with ``inside`` set: held out by device for independent rows, scored
    with width factors calibrated without that device's cases, and ``inside_seen``: the same
    row held out alone (module docstring)."""
    full = table_from(comparisons)
    pools = pools_of(pool_rows(comparisons))
    cases = held_out_cases(comparisons)
    tables: dict[str, dict[str, RegimeRange]] = {}
    fits: dict[str, list[WideningFit]] = {}
    out: list[Comparison] = []
    for c in comparisons:
        if not c.regime:
            out.append(c)
            continue
        metric = c.regime.split("|")[0]
        if c.role != "independent":
            out.append(replace(c, inside=_inside(full, c, packaged_widths(metric))))
            continue
        if c.group not in tables:
            tables[c.group] = table_from([x for x in comparisons if x.group != c.group])
            fits[c.group] = fit_cases(cases, without=c.group)
        widths = factors(fits[c.group], metric)
        inside = _inside(tables[c.group], c, widths)
        seen = _inside(_without_row(full, pools, c), c, widths)
        out.append(replace(c, inside=inside, inside_seen=seen))
    return out


@dataclass(frozen=True)
class RegimeCoverage:
    regime: str
    rows: int
    covered: int
    devices: int
    in_scope: bool
    seen_covered: int = 0  # inside the range with only the row itself held out
    effective_rows: float = math.nan  # rows discounted for errors shared within a device

    @property
    def coverage(self) -> float:
        return self.covered / self.rows if self.rows else math.nan

    @property
    def seen_coverage(self) -> float:
        return self.seen_covered / self.rows if self.rows else math.nan

    @property
    def sd(self) -> float:
        """Binomial sd of the coverage of an 80 % range over ``rows`` independent rows."""
        return math.sqrt(SPREAD / self.rows) if self.rows else math.nan

    @property
    def sd_effective(self) -> float:
        rows = self.effective_rows if self.effective_rows > 0 else self.rows
        return math.sqrt(SPREAD / rows) if rows else math.nan

    @property
    def judged(self) -> bool:
        enough = self.rows >= JUDGE_ROWS and self.devices >= JUDGE_DEVICES
        return self.in_scope and enough

    @property
    def within_target(self) -> bool | None:
        return abs(self.coverage - TARGET) <= BAND if self.judged else None

    @property
    def consistent(self) -> bool:
        """Within 2 (effective) sd of 80 %: chance alone could give this coverage."""
        return abs(self.coverage - TARGET) <= 2 * self.sd_effective

    def note(self) -> str:
        if not self.in_scope:
            return "out of scope: 2023 llama.cpp builds"
        chance = (
            "within 2 sd of 80 %"
            if self.consistent
            else "more than 2 sd from 80 %: a miss, not chance"
        )
        if self.judged:
            return "" if self.within_target else f"outside 75-85 %, {chance}"
        return (
            f"too few rows to judge (~{self.effective_rows:.0f} independent: sd "
            f"+-{self.sd_effective:.0%}); {chance}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "regime": self.regime,
            "rows": self.rows,
            "devices": self.devices,
            "covered": self.covered,
            "coverage": self.coverage,
            "seen_covered": self.seen_covered,
            "seen_coverage": self.seen_coverage,
            "sd": self.sd,
            "effective_rows": self.effective_rows,
            "sd_effective": self.sd_effective,
            "in_scope": self.in_scope,
            "judged": self.judged,
            "within_target": self.within_target,
            "consistent_with_target": self.consistent,
            "note": self.note(),
        }


def _held_out(annotated: Sequence[Comparison]) -> list[Comparison]:
    return [c for c in annotated if c.role == "independent" and c.inside is not None]


def device_correlation(annotated: Sequence[Comparison]) -> float:
    """Intra-device correlation of inside/outside over the in-scope held-out rows (one-way
    ANOVA estimator, a group = metric x device), clamped to [0, 1]; 0 without enough rows."""
    groups: dict[tuple[str, str], list[float]] = {}
    for c in _held_out(annotated):
        if in_scope(c):
            groups.setdefault((c.metric, c.group), []).append(1.0 if c.inside else 0.0)
    n, g = sum(len(v) for v in groups.values()), len(groups)
    if g < 2 or n <= g:
        return 0.0
    mean = sum(sum(v) for v in groups.values()) / n
    between = sum(len(v) * (sum(v) / len(v) - mean) ** 2 for v in groups.values()) / (g - 1)
    within = sum(sum((y - sum(v) / len(v)) ** 2 for y in v) for v in groups.values()) / (n - g)
    size = (n - sum(len(v) ** 2 for v in groups.values()) / n) / (g - 1)
    denominator = between + (size - 1) * within
    if denominator <= 0:
        return 0.0
    return min(1.0, max(0.0, (between - within) / denominator))


def _effective_rows(rows: Sequence[Comparison], rho: float) -> float:
    sizes: dict[str, int] = {}
    for c in rows:
        sizes[c.group] = sizes.get(c.group, 0) + 1
    n = len(rows)
    return n / (1 + (sum(m * m for m in sizes.values()) / n - 1) * rho)


def coverage_by_regime(annotated: Sequence[Comparison], fields: int = 3) -> list[RegimeCoverage]:
    """Held-out coverage of the independent rows per regime cut to its first ``fields`` parts
    (3: metric|engine|device class; 5: the full regime); in-scope regimes first."""
    rho = device_correlation(annotated)
    groups: dict[tuple[str, bool], list[Comparison]] = {}
    for c in _held_out(annotated):
        key = "|".join(c.regime.split("|")[:fields])
        groups.setdefault((key, in_scope(c)), []).append(c)
    return [
        RegimeCoverage(
            regime,
            len(rows),
            sum(bool(c.inside) for c in rows),
            len({c.group for c in rows}),
            scope,
            seen_covered=sum(bool(c.inside_seen) for c in rows),
            effective_rows=_effective_rows(rows, rho),
        )
        for (regime, scope), rows in sorted(groups.items(), key=lambda k: (not k[0][1], k[0][0]))
    ]


def overall(annotated: Sequence[Comparison], seen: bool = False) -> tuple[int, int]:
    """(covered, rows) over every in-scope independent row with a range (``seen``: each row
    held out alone instead of with its device)."""
    rows = [c for c in _held_out(annotated) if in_scope(c)]
    return sum(bool(c.inside_seen if seen else c.inside) for c in rows), len(rows)
