"""P10-P90 ranges on predictions, from the errors rigwise makes on independent measurements.

A prediction belongs to a *regime* (metric, engine, device class, precision, scale). The file
``catalog/data/prediction_intervals.csv`` holds, per regime, the 10th and 90th percentiles of
``ln(measured / predicted)`` over the independent validation rows of that regime (written by
``rigwise validate intervals --write``; its header says from which code and rows). A plan looks
up its most specific regime with enough rows; when it has to fall back past its device class or
engine (no validated rows like it), or runs on more devices than any validated row, the range
is widened and a note says so. Rates (tokens/s) scale by ``exp(q)``; times (seconds) by
``exp(-q)``; everything here is pure and cheap (the table is read once).

Quantiles are split-conformal: with n residuals the range spans the floor((n+1)/10)-th to the
ceil(9(n+1)/10)-th smallest, which covers a new exchangeable row with probability >= 80 %.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from rigwise.catalog.loader import data_path, read_commented_csv

TABLE_FILE = "prediction_intervals.csv"
MIN_ROWS = 10  # a regime needs this many independent rows to set its own range
MIN_GROUPS = 2  # ... from this many groups (devices; errors are correlated within one)
# Log-width factors when the device class or engine has no validated rows, and when the plan
# uses more than twice the devices of any validated row. These are the priors; the values used
# are calibrated on held-out coverage by `rigwise validate intervals --write` and stored in
# WIDENING_FILE (validation/intervals.py says how).
WIDEN_UNSEEN = 1.5
WIDEN_SCALE = 1.25
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
    regime: Regime
    rows: int
    groups: int  # distinct devices among the rows
    log_q10: float
    log_q90: float
    max_devices: int
    sources: str = ""


@dataclass(frozen=True)
class Interval:
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

    def to_dict(self) -> dict[str, Any]:
        return {
            "regime": self.regime,
            "basis": self.basis,
            "rows": self.rows,
            "widened": self.widened,
            "notes": list(self.notes),
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


def conformal_bounds(residuals: Sequence[float]) -> tuple[float, float]:
    """(q10, q90) of log residuals by split-conformal ranks (see the module docstring)."""
    ordered = sorted(residuals)
    n = len(ordered)
    low = max(math.floor((n + 1) * 0.1), 1)
    high = min(math.ceil((n + 1) * 0.9), n)
    return ordered[low - 1], ordered[high - 1]


def build_table(
    rows: Sequence[tuple[Regime, float, str, int, str]],
) -> dict[str, RegimeRange]:
    """Ranges of every regime (at every back-off level) with at least ``MIN_ROWS`` rows.

    ``rows``: (regime, log residual ln(measured/predicted) in rate terms, device group,
    devices, source) of independent validation rows.
    """
    pools: dict[str, list[tuple[Regime, float, str, int, str]]] = {}
    for row in rows:
        for dropped in LEVELS:
            pools.setdefault(row[0].without(dropped).key(), []).append(row)
    table: dict[str, RegimeRange] = {}
    for key, pool in pools.items():
        if len(pool) < MIN_ROWS or len({r[2] for r in pool}) < MIN_GROUPS:
            continue
        q10, q90 = conformal_bounds([r[1] for r in pool])
        table[key] = RegimeRange(
            regime=Regime(*key.split("|")),
            rows=len(pool),
            groups=len({r[2] for r in pool}),
            log_q10=q10,
            log_q90=q90,
            max_devices=max(r[3] for r in pool),
            sources="; ".join(sorted({r[4] for r in pool})),
        )
    return table


def interval_for(
    table: dict[str, RegimeRange],
    regime: Regime,
    devices: int,
    widen_unseen: float = WIDEN_UNSEEN,
    widen_scale: float = WIDEN_SCALE,
) -> Interval | None:
    """The range of the most specific regime with rows, widened where the plan is unlike them."""
    for dropped in LEVELS:
        found = table.get(regime.without(dropped).key())
        if found is None:
            continue
        notes: list[str] = []
        width = 1.0
        unseen = [name for name in dropped if name in _UNSEEN]
        if unseen:
            width *= widen_unseen
            what = " and ".join(f"{name} {getattr(regime, name)}" for name in unseen)
            notes.append(
                f"no validated rows for {what}: range from {found.regime.key()} "
                f"({found.rows} rows), widened x{widen_unseen:.2f}"
            )
        beyond = devices > 2 * found.max_devices
        if beyond:
            width *= widen_scale
            notes.append(
                f"{devices} devices, validated up to {found.max_devices}: "
                f"widened x{widen_scale:.2f}"
            )
        center = (found.log_q10 + found.log_q90) / 2
        half = (found.log_q90 - found.log_q10) / 2 * width
        return Interval(
            low_factor=math.exp(center - half),
            high_factor=math.exp(center + half),
            regime=regime.key(),
            basis=found.regime.key(),
            rows=found.rows,
            widened=width > 1.0,
            notes=tuple(notes),
            unseen=bool(unseen),
            beyond_scale=beyond,
        )
    return None


@functools.cache
def packaged_table() -> dict[str, RegimeRange]:
    """The regime ranges shipped in ``catalog/data/prediction_intervals.csv``."""
    path = data_path(TABLE_FILE)
    if not path.exists():
        return {}
    rows = read_commented_csv(path)
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
    path = data_path(WIDENING_FILE)
    if not path.exists():
        return {}
    return {
        (r["factor"], r.get("metric") or ANY): float(r["value"]) for r in read_commented_csv(path)
    }


def reload_widening() -> None:
    """Read WIDENING_FILE again (after ``rigwise validate intervals --write`` rewrote it)."""
    _widening_rows.cache_clear()
    lookup.cache_clear()


def packaged_widening(metric: str = ANY) -> tuple[float, float]:
    """(unseen, scale) factors calibrated on held-out coverage for ``metric`` (its own row, else
    the pooled one); the priors WIDEN_UNSEEN / WIDEN_SCALE where the file has neither."""
    rows = _widening_rows()

    def one(name: str, prior: float) -> float:
        return rows.get((name, metric), rows.get((name, ANY), prior))

    return one("unseen", WIDEN_UNSEEN), one("scale", WIDEN_SCALE)


@functools.lru_cache(maxsize=4096)  # sweeps ask for the same few regimes thousands of times
def lookup(regime: Regime, devices: int) -> Interval | None:
    return interval_for(packaged_table(), regime, devices, *packaged_widening(regime.metric))
