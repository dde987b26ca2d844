"""The width factors of the prediction ranges, calibrated on held-out coverage.

Ranges come from the independent rows of a regime (``estimate/intervals.py``); a plan is most
often on a device (or from a setup) those rows have not seen, and a plan whose device class or
engine has no validated rows gets the range of a broader regime; so does one on more than twice
the devices of any row behind its range. Three log-width factors, per metric where a metric has
enough cases, are measured by leaving rows out and checking them against what is left:

* **device** (leave one device out): each device's rows against the table rebuilt without it,
  where the range stays within their device class and engine and scale. Every range of the
  metric is widened by it: a device with few validated neighbours is covered less than 80 %.
* **unseen** (leave one device out, one device class out, one engine out): the held-out rows
  whose range backs off past their device class or engine are the cases, split by the back-off
  their range made, as a plan's range is: **unseen-class** (past the device class, within the
  engine) and **unseen-engine** (past the engine too). Predicting one engine's rows from
  another's needs far more width than one device class from another; a single pooled factor
  set by the hardest scheme over-covered every class back-off (serving: 94 % for 80 %).
* **scale** (leave the larger layouts out): for every device count ``d``, the table is rebuilt
  from the rows on at most ``d / 2`` devices, so each row on ``d`` devices is a scale
  extrapolation.

For each case the log-width factor ``w`` that would just cover it is ``|r - centre| /
half_width``; unseen and scale cases are divided by their metric's device factor (it applies to
them too). A factor is the order statistic of its cases' ``w`` at position 0.8 (n + 1),
interpolated (``_rank_80``): a new case needs at most it with probability 80 % (rounding the
position up, the split-conformal rank, aims at 80 % + up to 1 / (n + 1), which over-covers the
+-5 % target on the 10-20 cases most metrics have). A back-off's row (unseen-class,
unseen-engine) is written only with ``_enough`` cases, else a metric's plans use the
back-off's '*' row, then the unseen factor pooled over both back-offs
(``estimate.intervals.widths_from``). Unseen and scale are never below 1 (a fallback range
is never narrower than its basis); the device factor may be (down to 0.8): where the rows'
P10-P90 already covers more than 80 % of a new device's rows, it narrows every range to 80 %.
Cases where both unseen and scale apply are left out of both fits, so each factor is measured
alone. The held-out coverage report (``validation/coverage.py``) scores a device's rows with
factors fitted without its cases (``fit_cases(..., without=device)``).
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rigwise.estimate.intervals import (
    ANY,
    MIN_GROUPS,
    MIN_ROWS,
    PRIORS,
    UNWIDENED,
    WIDEN_DEVICE,
    WIDENING_FILE,
    Interval,
    Regime,
    Widths,
    interval_for,
    widths_from,
)
from rigwise.validation.intervals import TARGET, in_scope, table_from
from rigwise.validation.stats import Comparison

BACK_OFFS = ("class", "engine")  # what an unseen range backed off past (estimate/intervals.py)
# The device factor calibrates every range of a metric to 80 % held-out coverage from both
# sides (over-coverage misses the 80 % +- 5 % target too), within a guard; unseen and scale
# only ever widen a fallback range.
FLOORS = {"device": 0.8}
Case = tuple[float, str, str]  # needed log-width factor, device group, metric


@dataclass(frozen=True)
class WideningFit:
    factor: str  # device | unseen | unseen-class | unseen-engine | scale
    metric: str  # decode, serving, ... or '*' (every metric pooled)
    value: float  # the chosen log-width factor
    prior: float  # the guess it replaces
    cases: int  # held-out rows that needed this widening (and only this one)
    groups: int  # distinct devices among them
    covered_unwidened: int  # inside the basis range as it is (factor 1)
    covered_prior: int  # inside with the prior factor
    covered_chosen: int  # inside with the chosen factor

    def to_dict(self) -> dict[str, Any]:
        return {
            "factor": self.factor,
            "metric": self.metric,
            "value": self.value,
            "prior": self.prior,
            "cases": self.cases,
            "groups": self.groups,
            "coverage_unwidened": self.covered_unwidened / self.cases if self.cases else None,
            "coverage_prior": self.covered_prior / self.cases if self.cases else None,
            "coverage_chosen": self.covered_chosen / self.cases if self.cases else None,
        }


def _held_out(c: Comparison) -> bool:
    return c.role == "independent" and bool(c.regime) and in_scope(c)


def _needed(found: Interval, residual: float) -> float:
    """The log-width factor that just brings ``residual`` inside ``found`` (unwidened)."""
    low, high = math.log(found.low_factor), math.log(found.high_factor)
    half = (high - low) / 2
    distance = abs(residual - (low + high) / 2)
    if half <= 0:
        return math.inf if distance > 0 else 1.0
    return distance / half


def _cases(
    rows: Sequence[Comparison],
    split: Callable[[Comparison], Any],
    kind: Callable[[Interval], str | None],
) -> dict[str, list[Case]]:
    """(needed factor, group, metric) of each row against the rows not in its split,
    by the factor ``kind`` says the case measures (None: none)."""
    out: dict[str, list[Case]] = {}
    for part in sorted({split(c) for c in rows}, key=str):
        held = [c for c in rows if split(c) == part]
        gone = _groups(held)
        table = table_from([c for c in rows if split(c) != part and c.group not in gone])
        for c in held:
            found = interval_for(table, Regime(*c.regime.split("|")), c.devices, UNWIDENED)
            name = kind(found) if found is not None else None
            if found is not None and name is not None:
                case = (_needed(found, c.log_residual), c.group, _metric(c))
                out.setdefault(name, []).append(case)
    return out


def _metric(c: Comparison) -> str:
    return c.regime.split("|")[0]


def _groups(rows: Sequence[Comparison]) -> set[str]:
    return {c.group for c in rows}


def _scale_cases(rows: Sequence[Comparison]) -> list[Case]:
    out: list[Case] = []
    for devices in sorted({c.devices for c in rows}):
        smaller = [c for c in rows if 2 * c.devices < devices]
        if not smaller:
            continue
        table = table_from(smaller)
        for c in (c for c in rows if c.devices == devices):
            found = interval_for(table, Regime(*c.regime.split("|")), c.devices, UNWIDENED)
            if found is not None and found.beyond_scale and not found.unseen:
                out.append((_needed(found, c.log_residual), c.group, _metric(c)))
    return out


def _rank_80(needed: Sequence[float]) -> float:
    """The factor a new case needs with probability 80 %: the k-th smallest of n exchangeable
    cases covers a new one with probability k / (n + 1), so the order statistic at position
    0.8 (n + 1), interpolated between its neighbours (rounding up would aim at up to
    0.8 + 1 / (n + 1): 84 % on 18 cases, 88 % on 11)."""
    ordered = sorted(needed)
    position = TARGET * (len(ordered) + 1)
    k = math.floor(position)
    if k >= len(ordered):
        return ordered[-1]
    if k < 1:
        return ordered[0]
    low, high, frac = ordered[k - 1], ordered[k], position - k
    return low if frac == 0 or high == low else low + frac * (high - low)


def _enough(cases: Sequence[Case]) -> bool:
    return len(cases) >= MIN_ROWS and len({c[1] for c in cases}) >= MIN_GROUPS


def _fit(name: str, cases: Sequence[Case], metric: str = ANY) -> WideningFit:
    """The 80 % factor of ``cases`` (``_rank_80``), within its guard (``FLOORS``)."""
    prior = PRIORS[name]
    needed = [c[0] for c in cases]
    # no cases: the prior, and the file says so; the device factor is two-sided (FLOORS)
    value = max(FLOORS.get(name, 1.0), _rank_80(needed)) if needed else prior
    return WideningFit(
        factor=name,
        metric=metric,
        value=value,
        prior=prior,
        cases=len(needed),
        groups=len({c[1] for c in cases}),
        covered_unwidened=sum(w <= 1.0 for w in needed),
        covered_prior=sum(w <= prior for w in needed),
        covered_chosen=sum(w <= value for w in needed),
    )


def _fits(name: str, cases: list[Case], pooled: bool = True) -> list[WideningFit]:
    """The pooled fit (``pooled``: always, else only with enough cases), then one per metric
    with enough cases (``MIN_ROWS`` from ``MIN_GROUPS`` devices): metrics err differently
    (serving ranges back off further than decode ranges)."""
    fits = [_fit(name, cases)] if pooled or _enough(cases) else []
    for metric in sorted({c[2] for c in cases}):
        mine = [c for c in cases if c[2] == metric]
        if _enough(mine):
            fits.append(_fit(name, mine, metric))
    return fits


def held_out_cases(comparisons: Sequence[Comparison]) -> dict[str, list[Case]]:
    """The held-out cases of each factor (device, unseen-class, unseen-engine, scale), needed
    factors unscaled."""
    rows = [c for c in comparisons if _held_out(c)]

    def by_device(f: Interval) -> str | None:
        if f.beyond_scale:
            return None
        return _back_off(f) if f.unseen else "device"

    def only_unseen(f: Interval) -> str | None:
        return _back_off(f) if f.unseen and not f.beyond_scale else None

    def field(index: int) -> Callable[[Comparison], str]:
        return lambda c: c.regime.split("|")[0] + "|" + c.regime.split("|")[index]

    device = _cases(rows, lambda c: c.group, by_device)
    classes = _cases(rows, field(2), only_unseen)
    engines = _cases(rows, field(1), only_unseen)
    out = {"device": device.get("device", []), "scale": _scale_cases(rows)}
    for name in (f"unseen-{b}" for b in BACK_OFFS):
        out[name] = [*device.get(name, []), *classes.get(name, []), *engines.get(name, [])]
    return out


def _back_off(found: Interval) -> str:
    """unseen-engine where the range's basis dropped the engine, else unseen-class."""
    engine = found.basis.split("|")[1]
    return "unseen-engine" if engine == ANY else "unseen-class"


def fit_cases(cases: dict[str, list[Case]], without: str | None = None) -> list[WideningFit]:
    """Device, unseen (pooled and per back-off) and scale factors, pooled and per metric, from
    ``held_out_cases``; ``without``: leave that device's cases out (held-out coverage scores
    its rows with factors it did not help set)."""
    mine = {k: [c for c in v if c[1] != without] for k, v in cases.items()}
    device = _fits("device", mine["device"])
    over = {f.metric: f.value for f in device}
    levels = {b: _divided(mine[f"unseen-{b}"], over) for b in BACK_OFFS}
    unseen = [c for b in BACK_OFFS for c in levels[b]]
    each = [f for b in BACK_OFFS for f in _fits(f"unseen-{b}", levels[b], pooled=False)]
    scale = _fits("scale", _divided(mine["scale"], over))
    return [*device, *_fits("unseen", unseen), *each, *scale]


def calibrate(comparisons: Sequence[Comparison]) -> list[WideningFit]:
    """Device, unseen and scale factors, pooled and per metric, from held-out coverage."""
    return fit_cases(held_out_cases(comparisons))


def _divided(cases: Sequence[Case], device: dict[str, float]) -> list[Case]:
    """Cases' needed factors beyond the device factor of their metric (it applies to them)."""
    return [
        (w / device.get(metric, device.get(ANY, WIDEN_DEVICE)), group, metric)
        for w, group, metric in cases
    ]


def factors(fits: Sequence[WideningFit], metric: str) -> Widths:
    """The width factors of ``metric`` from ``fits``, looked up as plans look up the stored
    file (``estimate.intervals.widths_from``)."""
    return widths_from({(f.factor, f.metric): f.value for f in fits}, metric)


def widening_text(fits: Sequence[WideningFit]) -> str:
    today = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Log-width factors of the prediction ranges, calibrated on held-out coverage by",
        f"# `rigwise validate intervals --write` on {today} (validation/widening.py):",
        "# device = leave one device out (every range of the metric); unseen = leave one device /",
        "# device class / engine out, the rows whose range backs off past them: unseen-class =",
        "# ranges backed off past the device class, unseen-engine = past the engine too, unseen =",
        "# both pooled (a back-off without a row of its own uses it); scale = leave layouts on",
        "# more than half the devices out; unseen and scale beyond the device factor. value = the",
        "# 80 % point of the factor's held-out needed factors (order statistic at 0.8 (n + 1),",
        "# interpolated), never below 1 (device: 0.8); with no cases, the prior. coverage_* =",
        "# over its cases (for unseen and scale, 'unwidened' = with the device factor alone).",
        "# In-sample: the",
        "# held-out coverage of plans (validate intervals) scores each device with factors",
        "# fitted without its cases.",
        "# A metric's own row (enough cases from 2+ devices) overrides the pooled '*' row.",
        "factor,metric,value,prior,cases,groups,coverage_unwidened,coverage_prior,coverage_chosen",
    ]
    for f in fits:
        d = f.to_dict()
        cov = [
            "" if d[k] is None else f"{d[k]:.3f}"
            for k in ("coverage_unwidened", "coverage_prior", "coverage_chosen")
        ]
        lines.append(
            f"{f.factor},{f.metric},{f.value:.3f},{f.prior},{f.cases},{f.groups}," + ",".join(cov)
        )
    return "\n".join(lines) + "\n"


def write_widening(fits: Sequence[WideningFit], path: Path | None = None) -> Path:
    from rigwise.catalog.loader import data_path

    target = path or data_path(WIDENING_FILE)
    target.write_text(widening_text(fits), "utf-8")
    return target
