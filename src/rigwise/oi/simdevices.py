"""Simulated sensors and actuators over a ``SimPlant``, with per-device fault injection.

They implement the same ``Sensor``/``Actuator`` interfaces as the real drivers, so the controller
cannot tell them apart. Sensor faults: NaN, out of band, CRC error, no answer (comms loss).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from rigwise.errors import InputError, closest
from rigwise.oi.faults import FaultKind, FaultSpec
from rigwise.oi.hw import PumpCalibration, Quality, Reading, checked
from rigwise.oi.plant import SimPlant

# sensor name -> (unit, plausible low, plausible high): outside it a reading is a fault.
SENSOR_RANGES: dict[str, tuple[str, float, float]] = {
    "level": ("mL", 0.0, 50.0),
    "reservoir": ("mL", 0.0, 2000.0),
    "storage": ("mL", 0.0, 2000.0),
    "temperature": ("degC", 0.0, 60.0),
    "ph": ("pH", 0.0, 14.0),
    "glucose": ("mM", 0.0, 60.0),
    "lactate": ("mM", 0.0, 100.0),
    "osmolality": ("mOsm/kg", 100.0, 1000.0),
    "pressure": ("kPa", -50.0, 500.0),
    "bubble": ("flag", 0.0, 1.0),
    "heater_readback": ("duty", 0.0, 1.0),
    "spike_rate": ("Hz", 0.0, 1000.0),
}


def _truths(plant: SimPlant) -> dict[str, Callable[[], float]]:
    s = plant.state
    conc = plant.concentrations
    return {
        "level": lambda: s.housing_ml,
        "reservoir": lambda: s.reservoir_ml,
        "storage": lambda: s.storage_ml,
        "temperature": lambda: s.temperature_c,
        "ph": lambda: conc()["ph"],  # cached by the plant between changes
        "glucose": lambda: conc()["glucose_mm"],
        "lactate": lambda: conc()["lactate_mm"],
        "osmolality": lambda: conc()["osmolality_mosm_kg"],
        "pressure": lambda: s.line_pressure_kpa,
        "bubble": lambda: 1.0 if s.air_in_line else 0.0,
        "heater_readback": plant.heater_actual,
        "spike_rate": lambda: s.spike_rate_hz,
    }


NOISE = {"level": "level_noise_ml"}


def fault_devices(kind: FaultKind) -> tuple[str, ...]:
    """The devices the simulator can fault with ``kind``: on any other name the fault would
    change nothing (the plant models bubbles and occlusions on the feed line only)."""
    sensors = tuple(SENSOR_RANGES)
    return {
        FaultKind.AIR_IN_LINE: ("feed",),
        FaultKind.OCCLUSION: ("feed",),
        FaultKind.EMPTY_RESERVOIR: ("reservoir",),
        FaultKind.STUCK_HEATER: ("heater",),
        FaultKind.COMMS_LOSS: ("bus", *sensors),
    }.get(kind, sensors)


def check_fault_devices(faults: tuple[FaultSpec, ...]) -> None:
    """Refuse a fault on a device the simulator does not have ('sensor_oob:temprature' ran a
    clean simulation: no reading was ever faulted)."""
    for fault in faults:
        devices = fault_devices(fault.kind)
        if fault.device not in devices:
            hint = (
                f"Did you mean: {', '.join(closest(fault.device, devices))}?"
                if len(devices) > 1
                else f"Leave out ':{fault.device}' ({fault.kind.value} acts on the {devices[0]})."
            )
            raise InputError(
                f"The simulator has no device {fault.device!r} for fault kind {fault.kind.value}.",
                hint=hint,
            )


class SimSensor:
    def __init__(self, name: str, plant: SimPlant) -> None:
        self.name = name
        self.plant = plant
        self.unit, self.low, self.high = SENSOR_RANGES[name]
        self._truth = _truths(plant)[name]
        self._noise = plant.c[NOISE[name]] if name in NOISE else 0.0

    def read(self) -> Reading:
        plant, t = self.plant, self.plant.state.t_s
        if not plant._active:  # the common case, kept short: the loop reads a dozen per step
            value = self._truth()
            if self._noise:
                value += self._noise * float(plant.rng.standard_normal())
            return checked(self.name, value, self.unit, t, self.low, self.high)
        if plant.fault_active(FaultKind.COMMS_LOSS, "bus") or plant.fault_active(
            FaultKind.COMMS_LOSS, self.name
        ):
            return Reading(self.name, math.nan, self.unit, Quality.COMMS, t)
        if plant.fault_active(FaultKind.SENSOR_CRC, self.name):
            return Reading(self.name, math.nan, self.unit, Quality.CRC, t)
        value = self._truth()
        if plant.fault_active(FaultKind.SENSOR_NAN, self.name):
            value = math.nan
        elif plant.fault_active(FaultKind.SENSOR_OOB, self.name):
            value = self.low - 100.0
        elif self._noise:
            value += self._noise * float(plant.rng.standard_normal())
        return checked(self.name, value, self.unit, t, self.low, self.high)


class SimPump:
    """A timed-dose pump: ``set(volume_ml)`` stages, ``commit()`` runs it for the calibrated time
    and returns the volume the calibration says was commanded."""

    def __init__(self, name: str, plant: SimPlant, calibration: PumpCalibration) -> None:
        self.name = name
        self.plant = plant
        self.calibration = calibration
        self._staged = 0.0
        self.last_actual_ml = 0.0
        self.commits = 0  # pump runs actually started (tests check none happen under an alarm)

    def set(self, value: float) -> None:
        self._staged = max(0.0, value)

    def commit(self) -> float:
        staged, self._staged = self._staged, 0.0
        if staged <= 0:
            return 0.0
        if self.plant.fault_active(FaultKind.COMMS_LOSS, "bus"):
            return 0.0  # the command never reached the pump
        seconds = self.calibration.seconds_for(staged)
        self.commits += 1
        self.last_actual_ml = self.plant.transfer(self.name, seconds)
        return self.calibration.volume_for(seconds)

    def off(self) -> None:
        self._staged = 0.0


class SimHeater:
    def __init__(self, plant: SimPlant) -> None:
        self.name = "heater"
        self.plant = plant
        self._staged = 0.0

    def set(self, value: float) -> None:
        self._staged = min(1.0, max(0.0, value))

    def commit(self) -> float:
        if not self.plant.fault_active(FaultKind.COMMS_LOSS, "bus"):
            self.plant.set_heater_relay(True)
            self.plant.set_heater(self._staged)
        return self._staged

    def off(self) -> None:
        """Duty to zero AND the power relay open (a hardware path, so it holds under comms loss
        and with a stuck driver)."""
        self._staged = 0.0
        self.plant.set_heater(0.0)
        self.plant.set_heater_relay(False)
