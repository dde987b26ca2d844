"""Fault injection for the simulator: ``KIND[:DEVICE]@START[+DURATION]``.

Examples: ``occlusion@3d`` (the feed line blocks at day 3 for the default 6 h),
``sensor_nan:ph@2d+1h``, ``comms_loss@36h+10m``. Times take s, m, h or d.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from rigwise.errors import InputError, closest


class FaultKind(enum.Enum):
    AIR_IN_LINE = "air_in_line"
    OCCLUSION = "occlusion"
    EMPTY_RESERVOIR = "empty_reservoir"
    STUCK_HEATER = "stuck_heater"
    SENSOR_OOB = "sensor_oob"
    SENSOR_NAN = "sensor_nan"
    SENSOR_CRC = "sensor_crc"
    COMMS_LOSS = "comms_loss"


ALIASES = {"bubble": "air_in_line", "air": "air_in_line", "dry": "empty_reservoir"}
DEFAULT_DEVICE = {
    FaultKind.AIR_IN_LINE: "feed",
    FaultKind.OCCLUSION: "feed",
    FaultKind.EMPTY_RESERVOIR: "reservoir",
    FaultKind.STUCK_HEATER: "heater",
    FaultKind.SENSOR_OOB: "temperature",
    FaultKind.SENSOR_NAN: "temperature",
    FaultKind.SENSOR_CRC: "temperature",
    FaultKind.COMMS_LOSS: "bus",
}
DEFAULT_DURATION_S = 6 * 3600.0
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_PATTERN = re.compile(
    r"^(?P<kind>[a-z_]+)(?::(?P<device>[a-z_]+))?@(?P<start>[^+]+)"
    r"(?:\+(?P<dur>.+))?$"
)


@dataclass(frozen=True)
class FaultSpec:
    kind: FaultKind
    device: str
    start_s: float
    duration_s: float

    @property
    def end_s(self) -> float:
        return self.start_s + self.duration_s

    def active(self, t_s: float) -> bool:
        return self.start_s <= t_s < self.end_s

    def label(self) -> str:
        return f"{self.kind.value}:{self.device}@{self.start_s:g}s+{self.duration_s:g}s"


def parse_duration(text: str, what: str = "duration") -> float:
    """``90``, ``90s``, ``15m``, ``6h``, ``3d`` or ``1.5d`` to seconds."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([smhd]?)\s*", text or "")
    if not match:
        raise InputError(f"Bad {what} {text!r}.", hint="Use a number with s, m, h or d: 3d, 6h.")
    return float(match.group(1)) * _UNITS[match.group(2) or "s"]


def parse_fault(text: str) -> FaultSpec:
    match = _PATTERN.match(text.strip().lower())
    if not match:
        raise InputError(
            f"Bad fault {text!r}.",
            hint="Write KIND[:DEVICE]@START[+DURATION], e.g. occlusion@3d+6h.",
        )
    name = ALIASES.get(match.group("kind"), match.group("kind"))
    try:
        kind = FaultKind(name)
    except ValueError:
        options = closest(name, [k.value for k in FaultKind] + list(ALIASES))
        raise InputError(
            f"Unknown fault kind {name!r}.", hint=f"Did you mean: {', '.join(options)}?"
        ) from None
    start = parse_duration(match.group("start"), "fault start")
    duration = (
        parse_duration(match.group("dur"), "fault duration")
        if match.group("dur")
        else DEFAULT_DURATION_S
    )
    if duration <= 0:
        raise InputError(f"Fault {text!r} has no duration.", hint="Give +DURATION > 0, e.g. +6h.")
    return FaultSpec(kind, match.group("device") or DEFAULT_DEVICE[kind], start, duration)
