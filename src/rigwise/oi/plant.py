"""The simulator's plant: a physics-lite model of a perfused organoid housing.

Volumes (mL) of reservoir (fresh), housing, storage (spent) and waste; solutes as amounts
(umol = mM x mL) so that evaporation concentrates them; a first-order thermal model with the
heater and the load of incoming room-temperature media; pH from lactate; an MEA spike rate that
declines with age and drops when the environment leaves its band. Faults (``faults.FaultSpec``)
change the plant at control-period boundaries. Every constant comes from ``Constants``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from rigwise.oi.constants import Constants
from rigwise.oi.faults import FaultKind, FaultSpec

PUMPS = ("feed", "drain", "recycle")


@dataclass(slots=True)
class PlantState:
    t_s: float
    reservoir_ml: float
    housing_ml: float
    storage_ml: float
    waste_ml: float
    temperature_c: float
    glucose_umol: float
    lactate_umol: float
    solutes_uosm: float  # osmolality (mOsm/kg) x volume (mL)
    heater_duty: float = 0.0
    heater_relay_closed: bool = True
    line_pressure_kpa: float = 0.0
    air_in_line: bool = False
    spike_rate_hz: float = 0.0
    fed_ml: float = 0.0
    removed_ml: float = 0.0
    recycled_ml: float = 0.0
    evaporated_ml: float = 0.0
    max_housing_ml: float = 0.0
    dry_pump_events: int = 0
    overflow_events: int = 0
    active_faults: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class SimPlant:
    """The plant plus its fault schedule; ``advance(dt)`` integrates, ``transfer`` pumps."""

    def __init__(self, c: Constants, faults: tuple[FaultSpec, ...] = (), seed: int = 0) -> None:
        self.c = c
        self.faults = faults
        self.rng = np.random.default_rng(seed)
        v = c["housing_setpoint_ml"]
        self.state = PlantState(
            t_s=0.0,
            reservoir_ml=c["reservoir_initial_ml"],
            housing_ml=v,
            storage_ml=0.0,
            waste_ml=0.0,
            temperature_c=c["temperature_setpoint_c"],
            glucose_umol=c["fresh_glucose_mm"] * v,
            lactate_umol=0.0,
            solutes_uosm=c["fresh_osmolality_mosm_kg"] * v,
            max_housing_ml=v,
        )
        self._age0_days = 30.0
        self._held_reservoir_ml = 0.0
        self._flow = c["pump_flow_ml_per_s"]
        self._active: set[tuple[FaultKind, str]] = set()
        self._conc: dict[str, float] | None = None
        self.on_transfer: Any = None  # called after a pump moved liquid (``oi run`` persists)

    # -- persistence (``oi run`` keeps the simulated world between runs) -----------------------
    def snapshot(self) -> dict[str, Any]:
        return {"state": self.state.to_dict(), "held_reservoir_ml": self._held_reservoir_ml}

    def restore(self, data: dict[str, Any]) -> None:
        for key, value in data["state"].items():  # in place: devices hold this state object
            setattr(self.state, key, value)
        self._held_reservoir_ml = float(data.get("held_reservoir_ml", 0.0))
        self._conc = None
        self._apply_faults()

    # -- derived quantities -------------------------------------------------------------------
    def concentrations(self) -> dict[str, float]:
        """Cached between changes (sensors read it a dozen times per step)."""
        if self._conc is None:
            self._conc = self._concentrations()
        return self._conc

    def _concentrations(self) -> dict[str, float]:
        s = self.state
        v = max(s.housing_ml, 1e-6)
        lactate = s.lactate_umol / v
        return {
            "glucose_mm": s.glucose_umol / v,
            "lactate_mm": lactate,
            "osmolality_mosm_kg": s.solutes_uosm / v,
            "ph": self.c["fresh_ph"] - self.c["ph_drop_per_mm_lactate"] * lactate,
        }

    def fault_active(self, kind: FaultKind, device: str | None = None) -> bool:
        if not self._active:
            return False
        if device is None:
            return any(k is kind for k, _ in self._active)
        return (kind, device) in self._active

    # -- actuation -----------------------------------------------------------------------------
    def transfer(self, pump: str, seconds: float, recycled_quality: float = 1.0) -> float:
        """Run ``pump`` for ``seconds``; returns the volume that really moved (mL)."""
        s = self.state
        if seconds <= 0:
            return 0.0
        self._conc = None
        volume = self._flow * seconds
        if pump == "feed":
            if self.fault_active(FaultKind.OCCLUSION, "feed"):
                s.line_pressure_kpa = 3 * self.c["occlusion_pressure_kpa"]
                return 0.0
            if self.fault_active(FaultKind.AIR_IN_LINE, "feed"):
                volume *= 0.3
            dead = self.c["reservoir_min_ml"]  # below it the dip tube draws air
            if s.reservoir_ml - volume < dead:
                s.dry_pump_events += 1
                volume = max(0.0, s.reservoir_ml - dead)
            s.reservoir_ml -= volume
            self._add_to_housing(volume, self.c["fresh_glucose_mm"], 0.0)
            s.fed_ml += volume
        elif pump == "recycle":
            volume = min(volume, s.storage_ml)
            s.storage_ml -= volume
            glucose = self.c["fresh_glucose_mm"] * recycled_quality
            self._add_to_housing(volume, glucose, 0.0)
            s.recycled_ml += volume
        elif pump == "drain":
            volume = min(volume, max(0.0, s.housing_ml - 0.2))  # the outlet sits above the floor
            share = volume / max(s.housing_ml, 1e-9)
            s.glucose_umol -= s.glucose_umol * share
            s.lactate_umol -= s.lactate_umol * share
            s.solutes_uosm -= s.solutes_uosm * share
            s.housing_ml -= volume
            s.storage_ml += volume
            s.removed_ml += volume
        else:
            raise ValueError(f"unknown pump {pump!r}")
        if self.on_transfer is not None:
            self.on_transfer()
        return volume

    def _add_to_housing(self, volume: float, glucose_mm: float, lactate_mm: float) -> None:
        s = self.state
        if volume <= 0:
            return
        t_in = self.c["fresh_temperature_c"]
        s.temperature_c = (s.temperature_c * s.housing_ml + t_in * volume) / (s.housing_ml + volume)
        s.housing_ml += volume
        s.glucose_umol += glucose_mm * volume
        s.lactate_umol += lactate_mm * volume
        s.solutes_uosm += self.c["fresh_osmolality_mosm_kg"] * volume
        if s.housing_ml > s.max_housing_ml:
            s.max_housing_ml = s.housing_ml
        if s.housing_ml > self.c["housing_capacity_ml"]:
            s.overflow_events += 1

    def set_heater(self, duty: float) -> None:
        self.state.heater_duty = min(1.0, max(0.0, duty))

    def set_heater_relay(self, closed: bool) -> None:
        """The heater's power relay: a safe state that holds even when the driver is stuck."""
        self.state.heater_relay_closed = closed

    def heater_actual(self) -> float:
        """The driver's output duty (what the readback reports; stuck at 1 under the fault)."""
        return 1.0 if self.fault_active(FaultKind.STUCK_HEATER) else self.state.heater_duty

    def heater_power(self) -> float:
        return self.heater_actual() if self.state.heater_relay_closed else 0.0

    # -- continuous processes --------------------------------------------------------------------
    def advance(self, dt_s: float) -> None:
        c, s = self.c, self.state
        self._conc = None
        day = dt_s / 86400.0
        target = c["ambient_c"] + c["heater_gain_c"] * self.heater_power()
        s.temperature_c = target + (s.temperature_c - target) * math.exp(
            -dt_s / c["thermal_time_constant_s"]
        )
        uptake = min(s.glucose_umol, c["glucose_uptake_umol_per_day"] * day)
        s.glucose_umol -= uptake
        s.lactate_umol += c["lactate_per_glucose_mol_mol"] * uptake
        s.solutes_uosm += (
            (c["lactate_per_glucose_mol_mol"] - 1.0) * uptake * c["osmolality_per_mm_lactate"]
        )
        evaporated = min(c["evaporation_ml_per_day"] * day, s.housing_ml)
        s.housing_ml -= evaporated
        s.evaporated_ml += evaporated
        s.line_pressure_kpa *= 0.5  # pressure bleeds off through the tubing
        s.t_s += dt_s
        self._apply_faults()
        self._conc = None
        s.spike_rate_hz = self._spike_rate()

    def _apply_faults(self) -> None:
        s = self.state
        if not self.faults:
            return
        now = [f for f in self.faults if f.active(s.t_s)]
        self._active = {(f.kind, f.device) for f in now}
        s.active_faults = [f.label() for f in now]
        s.air_in_line = self.fault_active(FaultKind.AIR_IN_LINE)
        if self.fault_active(FaultKind.OCCLUSION):
            s.line_pressure_kpa = max(s.line_pressure_kpa, 2 * self.c["occlusion_pressure_kpa"])
        empty = self.fault_active(FaultKind.EMPTY_RESERVOIR)
        if empty and s.reservoir_ml > 0:
            self._held_reservoir_ml += s.reservoir_ml  # drained (a leak, a bottle swapped out)
            s.reservoir_ml = 0.0
        elif not empty and self._held_reservoir_ml > 0:
            s.reservoir_ml += self._held_reservoir_ml  # the operator refilled it
            self._held_reservoir_ml = 0.0

    def _spike_rate(self) -> float:
        c, s = self.c, self.state
        age = self._age0_days + s.t_s / 86400.0
        rate = c["spike_rate_hz"] * max(0.0, 1.0 - c["spike_decline_per_day"] * (age - 30.0))
        conc = self.concentrations()
        in_band = c["temperature_band_low_c"] <= s.temperature_c <= c["temperature_band_high_c"]
        if not in_band:
            rate *= 0.5
        if conc["glucose_mm"] < c["glucose_low_mm"]:
            rate *= 0.6
        if not c["ph_band_low"] <= conc["ph"] <= c["ph_band_high"]:
            rate *= 0.7
        return rate

    def spike_count(self, window_s: float, electrodes: int) -> int:
        return int(self.rng.poisson(self.state.spike_rate_hz * window_s * electrodes))
