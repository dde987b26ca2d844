"""P10-P90 ranges on predictions, from the errors rigwise makes on independent measurements.

A prediction belongs to a *regime* (metric, engine, device class, precision, scale). The file
``catalog/data/prediction_intervals.csv`` holds, per regime, the 10th and 90th percentiles of
``ln(measured / predicted)`` over the independent validation rows of that regime (written by
``rigwise validate intervals --write``; its header says from which code and rows). A plan looks
up its most specific regime with enough rows; when it has to fall back past its device class or
engine (no validated rows like it), or runs on more devices than any validated row, the range
is widened and a note says so. Rates (tokens/s) scale by ``exp(q)``; times (seconds) by
``exp(-q)``; everything here is pure and cheap (the table is read once).

Quantiles are split-conformal with every *device* weighing the same: a row of a device with
n_g rows of a pool of G devices weighs 1/(G n_g) (a new plan is most often on a device, or from
a setup, the rows have not seen; errors within one device are correlated), and the P90 is the
smallest residual whose cumulative weight reaches 0.9 (1 + 1/n_eff), n_eff = 1 / sum(w^2) the
effective number of rows (the (n+1)/n finite-sample level of split conformal; the P10 mirrors
it). With one row per device this is the usual rank rule: the floor((n+1)/10)-th to the
ceil(9(n+1)/10)-th smallest. Held-out by device, those ranges still cover a new device's rows
less than 80 % when a pool has few devices; the *device* factor (calibrated like the widening
factors, ``validation/widening.py``) widens every range of a metric by what that takes.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from rigwise.catalog.loader import packaged_text, parse_commented_csv

TABLE_FILE = "prediction_intervals.csv"
MIN_ROWS = 10  # a regime needs this many independent rows to set its own range
MIN_GROUPS = 2  # ... from this many groups (devices; errors are correlated within one)
# Log-width factors when the device class or engine has no validated rows, and when the plan
# uses more than twice the devices of any validated row. These are the priors; the values used
# are calibrated on held-out coverage by `rigwise validate intervals --write` and stored in
# WIDENING_FILE (validation/intervals.py says how).
WIDEN_UNSEEN = 1.5
WIDEN_SCALE = 1.25
WIDEN_DEVICE = 1.0  # every range of a metric, for a device the rows have not seen (see above)
# The prior of each width factor by its name in WIDENING_FILE (unseen-class / unseen-engine:
# backed off past the device class / past the engine too; unseen: both pooled).
PRIORS = {
    "device": WIDEN_DEVICE,
    "scale": WIDEN_SCALE,
    "unseen": WIDEN_UNSEEN,
    "unseen-class": WIDEN_UNSEEN,
    "unseen-engine": WIDEN_UNSEEN,
}
WIDENING_FILE = "prediction_interval_widening.csv"
ANY = "*"
FIELDS = ("metric", "engine", "device_class", "precision", "scale")
# Back-off order: the components dropped, most specific first.
LEVELS: tuple[tuple[str, ...], ...] = (
    (),
    ("scale",),
    ("scale", "precision"),
    ("scale", "precision", "device_class"),
    ("scale", "precision", "device_class", "engine"),
)
_UNSEEN = {"device_class", "engine"}


@dataclass(frozen=True)
class Regime:
    """The kind of figure a range is for: metric, engine, device class, precision, scale."""

    metric: str  # decode | prefill | serving | train_throughput | train_memory | memory
    engine: str  # llama.cpp | tensorrt-llm | ... | training
    device_class: str  # nvidia-gddr, apple-lpddr, cpu ... (inference); a100, h100 (training)
    precision: str  # quantized | 16-bit | fp8 | fp4
    scale: str  # 1 | 2-8 | 9-256 | >256 devices

    def key(self) -> str:
        return "|".join(getattr(self, f) for f in FIELDS)

    def without(self, dropped: Iterable[str]) -> Regime:
        return replace(self, **{name: ANY for name in dropped})


@dataclass(frozen=True)
class RegimeRange:
    """The P10-P90 range (log space) of one regime's validation rows, and their sources."""

    regime: Regime
    rows: int
    groups: int  # distinct devices among the rows
    log_q10: float
    log_q90: float
    max_devices: int
    sources: str = ""


@dataclass(frozen=True)
class Widths:
    """The log-width factors of one metric's ranges (``validation/widening.py`` calibrates
    them): ``device`` widens every range; ``unseen_class`` one backed off past the device
    class (same engine), ``unseen_engine`` one backed off past the engine too; ``scale`` one
    on more than twice the devices of any row behind it."""

    unseen_class: float = WIDEN_UNSEEN
    scale: float = WIDEN_SCALE
    device: float = WIDEN_DEVICE
    unseen_engine: float = WIDEN_UNSEEN


PRIOR_WIDTHS = Widths()
UNWIDENED = Widths(1.0, 1.0, 1.0, 1.0)


def widths_from(values: Mapping[tuple[str, str], float], metric: str) -> Widths:
    """The factors of ``metric`` from ``values`` keyed (factor, metric): the metric's own row,
    else the pooled '*' row, else the prior. A back-off (unseen-class, unseen-engine) without
    a row of its own takes the unseen factor pooled over both back-offs (the metric's, then
    '*'): what a back-off needs depends more on the back-off than on the metric. The one
    lookup of both the shipped file (``packaged_widths``) and fresh fits (``widening``)."""

    def one(name: str) -> float:
        return values.get((name, metric), values.get((name, ANY), PRIORS[name]))

    def unseen(back_off: str) -> float:
        own = f"unseen-{back_off}"
        for key in ((own, metric), (own, ANY), ("unseen", metric), ("unseen", ANY)):
            if key in values:
                return values[key]
        return PRIORS["unseen"]

    return Widths(unseen("class"), one("scale"), one("device"), unseen("engine"))


@dataclass(frozen=True)
class Interval:
    """A figure's range as factors, with the regime asked for and the one that set it."""

    low_factor: float  # multiply a rate by these; a time by their inverses (swapped)
    high_factor: float
    regime: str  # the regime asked for
    basis: str  # the regime whose rows set the range
    rows: int
    widened: bool
    notes: tuple[str, ...] = ()
    unseen: bool = False  # fell back past device class or engine
    beyond_scale: bool = False  # more than twice the devices of any row in its basis

    def rate(self, value: float) -> list[float]:
        return [value * self.low_factor, value * self.high_factor]

    def time(self, value: float) -> list[float]:
        return [value / self.high_factor, value / self.low_factor]

    @property
    def bias(self) -> str | None:
        """'faster' / 'slower' ('more' / 'less' memory) when the whole range lies on one side of
        the estimate: the rows of this regime measured faster (slower) than rigwise predicts.
        The estimate is kept (correcting it with independent rows would make them fit rows)."""
        memory = "memory" in self.regime.split("|")[0]
        if self.low_factor > 1.0:
            return "more" if memory else "faster"
        if self.high_factor < 1.0:
            return "less" if memory else "slower"
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "regime": self.regime,
            "basis": self.basis,
            "rows": self.rows,
            "widened": self.widened,
            "notes": list(self.notes),
            "bias": self.bias,
            "interval_note": BIAS_NOTES.get(self.bias or ""),
        }


BIAS_NOTES = {
    **{
        side: f"measurements on similar rigs ran {side} than this estimate (the whole range is "
        f"{where} it); the estimate is kept, not corrected by them"
        for side, where in (("faster", "above"), ("slower", "below"))
    },
    **{
        side: f"measurements on similar runs used {side} memory than this estimate (the whole "
        f"range is {where} it); the estimate is kept, not corrected by them"
        for side, where in (("more", "above"), ("less", "below"))
    },
}


def precision_class(quant: str) -> str:
    name = quant.lower()
    if "fp4" in name or name in ("nvfp4", "mxfp4"):
        return "fp4"
    if "fp8" in name or name == "e4m3":
        return "fp8"
    if name in ("f16", "fp16", "bf16", "f32", "fp32", "float16", "bfloat16"):
        return "16-bit"
    return "quantized"


def scale_class(devices: int) -> str:
    if devices <= 1:
        return "1"
    if devices <= 8:
        return "2-8"
    return "9-256" if devices <= 256 else ">256"


def _upper(weighted: Sequence[tuple[float, float]], level: float) -> float:
    """Smallest value whose cumulative weight reaches ``level`` (the largest if none does)."""
    total = 0.0
    for value, weight in weighted:
        total += weight
        if total >= level - 1e-12:
            return value
    return weighted[-1][0]


def group_bounds(residuals: Sequence[float], groups: Sequence[str]) -> tuple[float, float]:
    """(q10, q90) of log residuals, every group (device) weighing the same (module docstring)."""
    sizes: dict[str, int] = {}
    for group in groups:
        sizes[group] = sizes.get(group, 0) + 1
    weights = [1.0 / (len(sizes) * sizes[g]) for g in groups]
    n_eff = 1.0 / sum(w * w for w in weights)
    level = min(0.9 * (1.0 + 1.0 / n_eff), 1.0)
    up = sorted(zip(residuals, weights, strict=True))
    down = sorted((-r, w) for r, w in zip(residuals, weights, strict=True))
    return -_upper(down, level), _upper(up, level)


def conformal_bounds(residuals: Sequence[float]) -> tuple[float, float]:
    """(q10, q90) by split-conformal ranks: ``group_bounds`` with one row per group."""
    return group_bounds(residuals, [str(i) for i in range(len(residuals))])


@functools.lru_cache(maxsize=4096)
def level_keys(regime: Regime) -> tuple[str, ...]:
    """The keys of ``regime`` at every back-off level (cached: held-out coverage rebuilds the
    table hundreds of times from the same few dozen regimes)."""
    return tuple(regime.without(dropped).key() for dropped in LEVELS)


Row = tuple[Regime, float, str, int, str]  # regime, log residual, device group, devices, source


def pools_of(rows: Sequence[Row]) -> dict[str, list[Row]]:
    """The rows of every regime key at every back-off level."""
    pools: dict[str, list[Row]] = {}
    for row in rows:
        for key in level_keys(row[0]):
            pools.setdefault(key, []).append(row)
    return pools


def range_of(key: str, pool: Sequence[Row]) -> RegimeRange | None:
    """The range of one regime key from its rows; None below ``MIN_ROWS`` rows from
    ``MIN_GROUPS`` devices."""
    groups = {r[2] for r in pool}
    if len(pool) < MIN_ROWS or len(groups) < MIN_GROUPS:
        return None
    q10, q90 = group_bounds([r[1] for r in pool], [r[2] for r in pool])
    return RegimeRange(
        regime=Regime(*key.split("|")),
        rows=len(pool),
        groups=len(groups),
        log_q10=q10,
        log_q90=q90,
        max_devices=max(r[3] for r in pool),
        sources="; ".join(sorted({r[4] for r in pool})),
    )


def build_table(rows: Sequence[Row]) -> dict[str, RegimeRange]:
    """Ranges of every regime (at every back-off level) with at least ``MIN_ROWS`` rows.

    ``rows``: (regime, log residual ln(measured/predicted) in rate terms, device group,
    devices, source) of independent validation rows.
    """
    table: dict[str, RegimeRange] = {}
    for key, pool in pools_of(rows).items():
        found = range_of(key, pool)
        if found is not None:
            table[key] = found
    return table


def interval_for(
    table: dict[str, RegimeRange], regime: Regime, devices: int, widths: Widths = PRIOR_WIDTHS
) -> Interval | None:
    """The range of the most specific regime with rows, widened where the plan is unlike them
    (``widths.device``, the calibration for a device not in the rows, applies to every range;
    each kind of back-off has its own factor, ``Widths``)."""
    for dropped in LEVELS:
        found = table.get(regime.without(dropped).key())
        if found is None:
            continue
        notes: list[str] = []
        width = widths.device
        unseen = [name for name in dropped if name in _UNSEEN]
        if unseen:
            factor = widths.unseen_engine if "engine" in unseen else widths.unseen_class
            width *= factor
            what = " and ".join(f"{name} {getattr(regime, name)}" for name in unseen)
            notes.append(
                f"no validated rows for {what}: range from {found.regime.key()} "
                f"({found.rows} rows), widened x{factor:.2f}"
            )
        beyond = devices > 2 * found.max_devices
        if beyond:
            width *= widths.scale
            notes.append(
                f"{devices} devices, validated up to {found.max_devices}: "
                f"widened x{widths.scale:.2f}"
            )
        center = (found.log_q10 + found.log_q90) / 2
        half = (found.log_q90 - found.log_q10) / 2 * width
        return Interval(
            low_factor=math.exp(center - half),
            high_factor=math.exp(center + half),
            regime=regime.key(),
            basis=found.regime.key(),
            rows=found.rows,
            widened=bool(unseen) or beyond,
            notes=tuple(notes),
            unseen=bool(unseen),
            beyond_scale=beyond,
        )
    return None


@functools.cache
def packaged_table() -> dict[str, RegimeRange]:
    """The regime ranges shipped in ``catalog/data/prediction_intervals.csv``."""
    rows = _packaged_rows(TABLE_FILE)
    table: dict[str, RegimeRange] = {}
    for row in rows:
        regime = Regime(*(row[f] for f in FIELDS))
        table[regime.key()] = RegimeRange(
            regime=regime,
            rows=int(row["rows"]),
            groups=int(row["groups"]),
            log_q10=float(row["log_q10"]),
            log_q90=float(row["log_q90"]),
            max_devices=int(row["max_devices"]),
            sources=row["sources"],
        )
    return table


@functools.cache
def _widening_rows() -> dict[tuple[str, str], float]:
    return {
        (r["factor"], r.get("metric") or ANY): float(r["value"])
        for r in _packaged_rows(WIDENING_FILE)
    }


def _packaged_rows(name: str) -> tuple[dict[str, str], ...]:
    """The rows of a packaged table, none when it is not there (yet)."""
    try:
        return parse_commented_csv(packaged_text(name))
    except FileNotFoundError:
        return ()


# What layers above memoise from ``lookup`` (plan_intervals' ranges per setup): emptied with it.
ON_RELOAD: list[Callable[[], None]] = []


def reload_widening() -> None:
    """Read WIDENING_FILE again (after ``rigwise validate intervals --write`` rewrote it)."""
    _widening_rows.cache_clear()
    packaged_widths.cache_clear()
    lookup.cache_clear()
    for clear in ON_RELOAD:
        clear()


@functools.cache
def packaged_widths(metric: str = ANY) -> Widths:
    """The width factors of ``metric`` calibrated on held-out coverage, as stored in
    WIDENING_FILE (``widths_from``; the priors where the file has none)."""
    return widths_from(_widening_rows(), metric)


@functools.lru_cache(maxsize=4096)  # sweeps ask for the same few regimes thousands of times
def lookup(regime: Regime, devices: int) -> Interval | None:
    return interval_for(packaged_table(), regime, devices, packaged_widths(regime.metric))
