"""Latched interlocks: a critical alarm stops actuation until its condition is gone AND a person
acknowledges it. Warnings are events only. Every alarm carries time, value and rule version.

Which actuators an alarm stops: every critical alarm stops every pump; the heater goes to its
safe state (duty 0 and power relay open) only for the thermal and control-loss alarms
(``HEATER_STOPS``): keeping the culture at 37 degC is the safe state while, say, a line is blocked.
With the temperature sensor faulted the controller holds the heater's last duty (open loop)
rather than letting the culture cool.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, replace

from rigwise.oi.constants import Constants
from rigwise.oi.hw import Quality, Reading

RULES_VERSION = "oi-interlocks-1"


class AlarmKind(enum.Enum):
    OVERFLOW = "overflow"
    RESERVOIR_EMPTY = "reservoir_empty"
    BUBBLE = "bubble"
    OCCLUSION = "occlusion"
    UNDER_DELIVERY = "under_delivery"
    OVER_TEMPERATURE = "over_temperature"  # tier 2: heater off
    OVER_TEMPERATURE_CRITICAL = "over_temperature_critical"  # tier 3: everything safe
    HEATER_FAULT = "heater_fault"
    SENSOR_FAULT = "sensor_fault"
    COMMS_LOSS = "comms_loss"
    LOSS_OF_CONTROL = "loss_of_control"


HEATER_STOPS = frozenset(
    {
        AlarmKind.OVER_TEMPERATURE,
        AlarmKind.OVER_TEMPERATURE_CRITICAL,
        AlarmKind.HEATER_FAULT,
        AlarmKind.COMMS_LOSS,
        AlarmKind.LOSS_OF_CONTROL,
    }
)
# The fault kinds of the simulator and the alarm each must latch (tests and docs use this).
FAULT_ALARMS = {
    "air_in_line": AlarmKind.BUBBLE,
    "occlusion": AlarmKind.OCCLUSION,
    "empty_reservoir": AlarmKind.RESERVOIR_EMPTY,
    "stuck_heater": AlarmKind.HEATER_FAULT,
    "sensor_oob": AlarmKind.SENSOR_FAULT,
    "sensor_nan": AlarmKind.SENSOR_FAULT,
    "sensor_crc": AlarmKind.SENSOR_FAULT,
    "comms_loss": AlarmKind.COMMS_LOSS,
}


@dataclass(frozen=True)
class Condition:
    kind: AlarmKind
    device: str
    value: float
    message: str


@dataclass(frozen=True)
class Alarm:
    kind: AlarmKind
    device: str
    value: float
    message: str
    latched_at_s: float
    rule_version: str = RULES_VERSION
    condition_active: bool = True
    cleared_at_s: float | None = None
    acked_at_s: float | None = None

    @property
    def key(self) -> str:
        return f"{self.kind.value}:{self.device}"


@dataclass(frozen=True)
class LoopContext:
    """What the controller knows besides readings: the heater command it last sent, the
    delivered/commanded ratio of the last finished dose, the gap since the previous step."""

    heater_commanded: float | None = None
    delivery_ratio: float | None = None
    step_gap_s: float = 0.0
    period_s: float = 10.0


def _sensor_conditions(readings: Mapping[str, Reading]) -> list[Condition]:
    out: list[Condition] = []
    if all(r.quality is Quality.OK for r in readings.values()):
        return out
    lost = [r.name for r in readings.values() if r.quality is Quality.COMMS]
    if lost:
        device = "bus" if len(lost) == len(readings) else ",".join(sorted(lost))
        out.append(
            Condition(
                AlarmKind.COMMS_LOSS,
                device,
                float(len(lost)),
                f"{len(lost)} device(s) did not answer",
            )
        )
    for r in readings.values():
        if r.quality is not Quality.COMMS and not r.ok:
            out.append(
                Condition(
                    AlarmKind.SENSOR_FAULT,
                    r.name,
                    r.value,
                    f"{r.name} reading is {r.quality.value}",
                )
            )
    return out


def evaluate(c: Constants, readings: Mapping[str, Reading], ctx: LoopContext) -> list[Condition]:
    """Every critical condition present now (pure: same inputs, same answer)."""
    out = _sensor_conditions(readings)

    def value(name: str) -> float | None:
        r = readings.get(name)
        return r.value if r is not None and r.quality is Quality.OK else None

    def add(kind: AlarmKind, device: str, v: float, message: str) -> None:
        out.append(Condition(kind, device, v, message))

    level, reservoir = value("level"), value("reservoir")
    if level is not None and level > c["housing_high_level_ml"]:
        add(AlarmKind.OVERFLOW, "housing", level, f"housing at {level:.2f} mL")
    if reservoir is not None and reservoir < c["reservoir_min_ml"]:
        add(AlarmKind.RESERVOIR_EMPTY, "reservoir", reservoir, f"reservoir at {reservoir:.2f} mL")
    if (bubble := value("bubble")) is not None and bubble >= 0.5:
        add(AlarmKind.BUBBLE, "feed", bubble, "air in the feed line")
    if (pressure := value("pressure")) is not None and pressure > c["occlusion_pressure_kpa"]:
        add(AlarmKind.OCCLUSION, "feed", pressure, f"line pressure {pressure:.0f} kPa")
    if (temp := value("temperature")) is not None:
        if temp > c["temperature_safe_state_c"]:
            add(AlarmKind.OVER_TEMPERATURE_CRITICAL, "housing", temp, f"{temp:.2f} degC")
        if temp > c["temperature_heater_off_c"]:
            add(AlarmKind.OVER_TEMPERATURE, "housing", temp, f"{temp:.2f} degC")
    readback = value("heater_readback")
    if readback is not None and ctx.heater_commanded is not None:
        gap = abs(readback - ctx.heater_commanded)
        if gap > c["heater_readback_tolerance"]:
            add(
                AlarmKind.HEATER_FAULT,
                "heater",
                readback,
                f"heater reads back {readback:.2f}, commanded {ctx.heater_commanded:.2f}",
            )
    if ctx.delivery_ratio is not None and ctx.delivery_ratio < c["under_delivery_ratio"]:
        add(
            AlarmKind.UNDER_DELIVERY,
            "feed",
            ctx.delivery_ratio,
            f"delivered {ctx.delivery_ratio:.0%} of the commanded volume",
        )
    if ctx.step_gap_s > 3 * ctx.period_s:
        add(
            AlarmKind.LOSS_OF_CONTROL,
            "controller",
            ctx.step_gap_s,
            f"no control step for {ctx.step_gap_s:.0f} s",
        )
    return out


class AlarmBook:
    """The latched alarms; ``update`` latches and clears, ``ack`` releases cleared ones."""

    def __init__(self) -> None:
        self.alarms: dict[str, Alarm] = {}

    def update(self, t_s: float, conditions: list[Condition]) -> list[Alarm]:
        """Latch new conditions, mark gone ones cleared; returns the newly latched alarms."""
        present = {f"{c.kind.value}:{c.device}": c for c in conditions}
        new: list[Alarm] = []
        for key, cond in present.items():
            alarm = self.alarms.get(key)
            if alarm is None:
                alarm = Alarm(cond.kind, cond.device, cond.value, cond.message, t_s)
                new.append(alarm)
            elif not alarm.condition_active:
                alarm = replace(alarm, condition_active=True, cleared_at_s=None)
            self.alarms[key] = alarm
        for key, alarm in self.alarms.items():
            if key not in present and alarm.condition_active:
                self.alarms[key] = replace(alarm, condition_active=False, cleared_at_s=t_s)
        return new

    def ack(self, t_s: float, what: str = "all") -> tuple[list[Alarm], list[Alarm]]:
        """Acknowledge alarms matching ``what`` (``all``, a kind, or kind:device). Returns
        (released, refused): an alarm whose condition is still present stays latched."""
        released, refused = [], []
        for key, alarm in list(self.alarms.items()):
            if what not in ("all", alarm.kind.value, key):
                continue
            if alarm.condition_active:
                refused.append(alarm)
            else:
                released.append(replace(alarm, acked_at_s=t_s))
                del self.alarms[key]
        return released, refused

    @property
    def latched(self) -> list[Alarm]:
        return list(self.alarms.values())

    def pumps_allowed(self) -> bool:
        return not self.alarms

    def heater_allowed(self) -> bool:
        return not any(a.kind in HEATER_STOPS for a in self.alarms.values())

    def restore(self, alarms: list[Alarm]) -> None:
        self.alarms = {a.key: a for a in alarms}
