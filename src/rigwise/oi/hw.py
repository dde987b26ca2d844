"""Hardware behind small interfaces: sensors return typed readings with a quality flag (never a
silent zero), actuators stage with ``set``, apply with ``commit`` and stop at once with ``off``.

Calibrations turn raw units (pump seconds) into real ones (mL), fitted from weighed runs and
carrying their provenance (an id hashed from the runs, the source, the date).
"""

from __future__ import annotations

import enum
import hashlib
import json
import math
import time
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from rigwise.errors import InputError


class Quality(enum.Enum):
    OK = "ok"
    NAN = "nan"  # the device answered, but not with a number
    OUT_OF_BAND = "out_of_band"  # a number outside what the sensor can physically report
    CRC = "crc"  # the frame failed its checksum
    COMMS = "comms"  # the device did not answer
    NOT_READY = "not_ready"  # a conversion is still pending


class Reading(NamedTuple):
    """One sensor reading (immutable; a NamedTuple because the loop makes a dozen per step)."""

    name: str
    value: float
    unit: str
    quality: Quality
    t_s: float

    @property
    def ok(self) -> bool:
        return self.quality is Quality.OK


def checked(name: str, value: float, unit: str, t_s: float, low: float, high: float) -> Reading:
    """A reading whose value is NaN or outside ``[low, high]`` is a fault, never OK."""
    if low <= value <= high:  # False for NaN as well
        return Reading(name, value, unit, Quality.OK, t_s)
    if not math.isfinite(value):
        return Reading(name, math.nan, unit, Quality.NAN, t_s)
    return Reading(name, value, unit, Quality.OUT_OF_BAND, t_s)


class Sensor(Protocol):
    name: str

    def read(self) -> Reading: ...


class Actuator(Protocol):
    """``set`` stages a command (a pump volume, a heater duty); ``commit`` applies it."""

    name: str

    def set(self, value: float) -> None: ...

    def commit(self) -> float: ...

    def off(self) -> None: ...


class Clock(Protocol):
    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class WallClock:
    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, seconds))


class SimClock:
    """Simulated time: ``sleep`` advances it, nothing waits."""

    def __init__(self, start_s: float = 0.0) -> None:
        self.t_s = start_s

    def now(self) -> float:
        return self.t_s

    def sleep(self, seconds: float) -> None:
        self.t_s += max(0.0, seconds)


@dataclass(frozen=True)
class WeighedRun:
    duration_s: float
    mass_g: float


@dataclass(frozen=True)
class PumpCalibration:
    """volume_ml = flow_ml_per_s * seconds + offset_ml (least squares over weighed runs)."""

    pump: str
    flow_ml_per_s: float
    offset_ml: float
    runs: tuple[WeighedRun, ...]
    density_g_per_ml: float
    source: str
    calibration_id: str

    def seconds_for(self, volume_ml: float) -> float:
        if volume_ml <= 0:
            return 0.0
        return max(0.0, (volume_ml - self.offset_ml) / self.flow_ml_per_s)

    def volume_for(self, seconds: float) -> float:
        return max(0.0, self.flow_ml_per_s * seconds + self.offset_ml) if seconds > 0 else 0.0


def fit_pump_calibration(
    pump: str,
    runs: list[WeighedRun],
    *,
    density_g_per_ml: float = 1.007,
    source: str = "weighed runs",
    plausible_ml_per_s: tuple[float, float] | None = None,
) -> PumpCalibration:
    """Fit flow and offset from timed runs weighed on a balance.

    The default density is culture medium's (~1.007 g/mL, DMEM at 37 degC); pass water's 0.997
    when calibrating with water at 25 degC. A flow outside ``plausible_ml_per_s`` (the plant
    constants pump_flow_plausible_min/max_ml_per_s) is refused: a unit slip, not a pump."""
    hint = "Give e.g. --run 60:1.02 --run 120:2.03 (seconds:grams)."
    for r in runs:  # 1e309 g was an infinite flow, stored and dosed from
        if not (math.isfinite(r.duration_s) and math.isfinite(r.mass_g)) or not (
            r.duration_s > 0 and r.mass_g >= 0
        ):
            raise InputError(
                f"Weighed run {r.duration_s:g}:{r.mass_g:g} needs a finite duration > 0 s and "
                "a finite mass >= 0 g.",
                hint=hint,
            )
    if not runs:
        raise InputError("A pump calibration needs at least one weighed run.", hint=hint)
    good = list(runs)
    xs = [r.duration_s for r in good]
    ys = [r.mass_g / density_g_per_ml for r in good]
    if len(set(xs)) == 1:
        flow, offset = sum(ys) / sum(xs), 0.0  # one duration: through the origin
    else:
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        sxx = sum((x - mx) ** 2 for x in xs)
        flow = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
        offset = my - flow * mx
    if flow <= 0:
        raise InputError(
            f"The runs give a non-positive flow ({flow:.4g} mL/s).",
            hint="Check the masses: longer runs must weigh more.",
        )
    if plausible_ml_per_s is not None and not (
        plausible_ml_per_s[0] <= flow <= plausible_ml_per_s[1]
    ):
        low, high = (60 * bound for bound in plausible_ml_per_s)
        raise InputError(
            f"The runs give {flow * 60:.4g} mL/min, outside what a small peristaltic pump "
            f"moves ({low:.3g}-{high:.3g} mL/min, plant constants pump_flow_plausible_*).",
            hint="Check the units: seconds and grams (60:1.01 is 1.01 g in 60 s).",
        )
    blob = json.dumps([pump, [(r.duration_s, r.mass_g) for r in good], density_g_per_ml])
    cal_id = "cal-" + hashlib.sha256(blob.encode()).hexdigest()[:10]
    return PumpCalibration(pump, flow, offset, tuple(good), density_g_per_ml, source, cal_id)


def nominal_calibration(pump: str, flow_ml_per_s: float) -> PumpCalibration:
    """An uncalibrated pump at its nominal flow (the simulator's default)."""
    run = WeighedRun(60.0, 60.0 * flow_ml_per_s * 1.007)
    return fit_pump_calibration(pump, [run], source="nominal flow (not weighed)")
