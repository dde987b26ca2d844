"""Accelerated simulation: the controller against the simulated plant, days in seconds.

``simulate(days=30, seed=1)`` returns a ``SimulationReport`` with the health index, every
alarm (with its latency from the fault that caused it), volumes and the ledger error.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

from rigwise.errors import InputError
from rigwise.oi.constants import Constants, load_constants
from rigwise.oi.controller import Controller
from rigwise.oi.faults import FaultSpec
from rigwise.oi.hw import SimClock, nominal_calibration
from rigwise.oi.interlocks import FAULT_ALARMS
from rigwise.oi.plant import SimPlant
from rigwise.oi.simdevices import (
    SENSOR_RANGES,
    SimHeater,
    SimPump,
    SimSensor,
    check_fault_devices,
)
from rigwise.oi.store import Store
from rigwise.units import format_seconds, parse_seconds

MAX_DAYS = 365.0
# The accelerated simulation's control period. The real loop (`oi run`) defaults to 10 s; 60 s
# keeps 30 simulated days within seconds, and every interlock still acts within one period.
SIM_PERIOD_S = 60.0


@dataclass(frozen=True)
class SimulationReport:
    days: float
    seed: int
    period_s: float
    health_index: str
    health_score: float | None
    health_components: dict[str, float | None]
    health_trend: list[dict[str, Any]]
    alarms: list[dict[str, Any]]
    faults: list[dict[str, Any]]
    max_housing_volume_ml: float
    housing_capacity_ml: float
    dosed_ml: float
    removed_ml: float
    recycled_ml: float
    evaporated_ml: float
    ledger_error_ml: float
    ledger_max_abs_error_ml: float
    exchanges: int
    doses: int
    pump_commits_during_alarm: int
    dry_pump_events: int
    overflow_events: int
    final_temperature_c: float
    wall_time_s: float
    constants_digest: str
    notes: list[str] = field(default_factory=list)


@dataclass
class SimRig:
    """The simulated plant with its devices and a controller (shared by simulate, run, tests)."""

    plant: SimPlant
    controller: Controller
    clock: SimClock
    pumps: dict[str, SimPump]
    commits_during_alarm: int = 0


def build_sim(
    c: Constants,
    faults: tuple[FaultSpec, ...],
    seed: int,
    store: Store,
    *,
    period_s: float,
    recycle: bool = False,
    crash_hook: Any = None,
) -> SimRig:
    check_fault_devices(faults)
    plant = SimPlant(c, faults, seed)
    clock = SimClock()
    sensors = {name: SimSensor(name, plant) for name in SENSOR_RANGES}
    pumps = {
        n: SimPump(n, plant, nominal_calibration(n, c["pump_flow_ml_per_s"]))
        for n in ("feed", "drain", "recycle")
    }
    ctrl = Controller(
        c,
        sensors,
        pumps,
        SimHeater(plant),
        clock,
        store,
        period_s=period_s,
        recycle=recycle,
        crash_hook=crash_hook,
    )
    return SimRig(plant, ctrl, clock, pumps)


def _said(seconds: float) -> str:
    """``seconds`` as people write them ('400 d', not '3.456e+07s'), with the exact seconds
    when that rounds: '--period 3601' is '1 h (3601 s)', not '1 h' beside 'Use 1s to 1h'."""
    text = format_seconds(seconds)
    try:  # the text read back as a duration is the value: nothing rounded away
        exact = math.isclose(parse_seconds(text.lstrip("-")), abs(seconds), rel_tol=1e-9)
    except InputError:  # '∞'
        exact = False
    return text if exact else f"{text} ({seconds:g} s)"


def _check(
    days: float,
    period_s: float,
    acks: tuple[float, ...],
    faults: tuple[FaultSpec, ...],
    c: Constants,
) -> None:
    if not 0 < days <= MAX_DAYS:
        raise InputError(f"--days {days:g} is out of range.", hint=f"Use 0 < days <= {MAX_DAYS:g}.")
    if not 1.0 <= period_s <= 3600.0:  # the hint said 1h, which check_period then refused
        raise InputError(f"--period {_said(period_s)} is out of range.", hint=period_hint(c))
    end_s = days * 86400.0
    for a in acks:
        if a < 0:
            raise InputError(f"Ack time {_said(a)} is negative.", hint="Give a time like 4d.")
        if a >= end_s:
            raise InputError(
                f"Ack time {_said(a)} is after the simulation's end ({days:g} d).",
                hint=f"Give a time before {days:g}d, or simulate more --days.",
            )
    for fault in faults:
        if fault.start_s >= end_s:
            raise InputError(
                f"Fault {fault.kind.value}:{fault.device} at {_said(fault.start_s)} "
                f"starts after the simulation's end ({days:g} d): it would never happen.",
                hint=f"Give a start before {days:g}d, or simulate more --days.",
            )


# Samples per rise time of a sampled loop: 4 to 10 (Astrom & Wittenmark, Computer-Controlled
# Systems, sampling-period rule of thumb); a first-order housing rises (10-90 %) in 2.2 time
# constants, so the longest control period is 2.2 / 4 of the thermal time constant.
RISE_TIMES_PER_TAU = 2.2
MIN_SAMPLES_PER_RISE = 4.0


def longest_period_s(c: Constants) -> tuple[float, str]:
    """The longest control period the heater loop takes, and why. Besides the sampling rule, a
    heater stuck at full duty is seen by its readback one period later: in that period it must
    not carry the housing from the setpoint past heater-off (tier 2). 330 s let it run past the
    safe state ('--period 5m --fault stuck_heater@1d' latched over_temperature_critical, and a
    temperature sensor's recovery overshot to it): 97 s with the packaged constants."""
    tau = c["thermal_time_constant_s"]
    sampling = RISE_TIMES_PER_TAU * tau / MIN_SAMPLES_PER_RISE
    full = c["ambient_c"] + c["heater_gain_c"]  # where a heater stuck on carries the housing
    setpoint, off = c["temperature_setpoint_c"], c["temperature_heater_off_c"]
    stuck = tau * math.log((full - setpoint) / (full - off)) if full > off else math.inf
    if stuck < sampling:
        return math.floor(stuck), (
            f"a heater stuck on for one period would carry the housing from the {setpoint:g} degC "
            f"setpoint past heater-off ({off:g} degC) before its readback is checked (thermal "
            f"time constant {_said(tau)})"
        )
    return math.floor(sampling), (
        f"the housing's thermal time constant is {_said(tau)}, so the heater loop overshoots "
        "into a false over-temperature alarm (4 samples per rise time of 2.2 time constants)"
    )


def check_period(period_s: float, c: Constants) -> None:
    """A control period past the heater loop's limits: '--days 2 --period 10min' latched a false
    over-temperature alarm at 1200 s, no fault given; see longest_period_s."""
    most, why = longest_period_s(c)
    if period_s > most:
        raise InputError(
            f"--period {_said(period_s)} is too long for the housing's heater loop: {why}.",
            hint=period_hint(c),
        )


def period_hint(c: Constants) -> str:
    """The control periods the loop takes, 1 s to the heater loop's limit (at most 1 h)."""
    return f"Use 1s to {_said(min(longest_period_s(c)[0], 3600.0))}."


def simulate(
    days: float = 30.0,
    seed: int = 1,
    faults: tuple[FaultSpec, ...] = (),
    acks: tuple[float, ...] = (),
    *,
    period_s: float = SIM_PERIOD_S,
    recycle: bool = False,
    constants: Constants | None = None,
    store: Store | None = None,
) -> SimulationReport:
    c = constants or load_constants()
    _check(days, period_s, acks, faults, c)
    check_period(period_s, c)
    store = store or Store()
    rig = build_sim(c, faults, seed, store, period_s=period_s, recycle=recycle)
    started = time.perf_counter()
    trend = _run(rig, days, sorted(acks))
    rig.controller.flush()
    return _report(rig, days, seed, period_s, faults, trend, time.perf_counter() - started)


def _run(rig: SimRig, days: float, acks: list[float]) -> list[dict[str, Any]]:
    ctrl, plant, clock = rig.controller, rig.plant, rig.clock
    steps = round(days * 86400.0 / ctrl.period_s)
    trend: list[dict[str, Any]] = []
    next_day = 86400.0
    for _ in range(steps):
        while acks and clock.now() >= acks[0]:
            ctrl.ack("all")
            acks.pop(0)
        before = sum(p.commits for p in rig.pumps.values())
        ctrl.step()
        if ctrl.book.alarms and sum(p.commits for p in rig.pumps.values()) != before:
            rig.commits_during_alarm += 1  # checked from the pumps' side, not the controller's
        plant.advance(ctrl.period_s)
        clock.sleep(ctrl.period_s)
        if clock.now() >= next_day:
            idx = ctrl.index()
            trend.append({"day": round(next_day / 86400.0), "health": idx.display})
            next_day += 86400.0
    return trend


def _alarm_rows(rig: SimRig, faults: tuple[FaultSpec, ...]) -> list[dict[str, Any]]:
    rows = []
    store = rig.controller.store
    acked = {
        (e.data["kind"], e.data["device"], e.data["latched_at_s"]): e.t_s
        for e in store.events(("alarm_acked",))
    }
    cleared: dict[tuple[str, str, float], float] = {}
    for e in store.events(("alarm_cleared",)):
        cleared[(e.data["kind"], e.data["device"], e.data["latched_at_s"])] = e.t_s
    for e in store.events(("alarm_latched",)):
        key = (e.data["kind"], e.data["device"], e.data["latched_at_s"])
        cause = next(
            (
                f
                for f in faults
                if FAULT_ALARMS[f.kind.value].value == e.data["kind"]
                and f.start_s <= e.t_s <= f.end_s + 1
            ),
            None,
        )
        rows.append(
            {
                "kind": e.data["kind"],
                "device": e.data["device"],
                "value": e.data["value"],
                "message": e.data["message"],
                "latched_at_s": e.t_s,
                "rule_version": e.rule_version,
                "cleared_at_s": cleared.get(key),
                "acked_at_s": acked.get(key),
                "latency_from_fault_s": None if cause is None else e.t_s - cause.start_s,
            }
        )
    return rows


def _report(
    rig: SimRig,
    days: float,
    seed: int,
    period_s: float,
    faults: tuple[FaultSpec, ...],
    trend: list[dict[str, Any]],
    wall_s: float,
) -> SimulationReport:
    ctrl, s, c = rig.controller, rig.plant.state, rig.controller.c
    idx = ctrl.index()
    level = s.housing_ml
    ctrl.ledger.reconcile(rig.clock.now() - ctrl.start_s, level)
    fault_rows = [
        {
            "kind": f.kind.value,
            "device": f.device,
            "start_s": f.start_s,
            "end_s": f.end_s,
            "expected_alarm": FAULT_ALARMS[f.kind.value].value,
        }
        for f in faults
    ]
    return SimulationReport(
        days=days,
        seed=seed,
        period_s=period_s,
        health_index=idx.display,
        health_score=idx.score,
        health_components=idx.components,
        health_trend=trend,
        alarms=_alarm_rows(rig, faults),
        faults=fault_rows,
        max_housing_volume_ml=s.max_housing_ml,
        housing_capacity_ml=c["housing_capacity_ml"],
        dosed_ml=s.fed_ml + s.recycled_ml,
        removed_ml=s.removed_ml,
        recycled_ml=s.recycled_ml,
        evaporated_ml=s.evaporated_ml,
        ledger_error_ml=abs(ctrl.ledger.last_error_ml),
        ledger_max_abs_error_ml=ctrl.ledger.max_abs_error_ml,
        exchanges=ctrl.scheduler.completed,
        doses=ctrl.doses,
        pump_commits_during_alarm=rig.commits_during_alarm,
        dry_pump_events=s.dry_pump_events,
        overflow_events=s.overflow_events,
        final_temperature_c=s.temperature_c,
        wall_time_s=wall_s,
        constants_digest=c.digest(),
    )
