"""The driver set of a real rig, from YAML (pydantic at the edge). Example (docs/oi.md):

    i2c_bus: 1
    pumps:
      feed:  {type: pwm, pin: 18, duty: 0.8, flow_ml_per_s: 0.0167}
      drain: {type: stepper, step_pin: 23, dir_pin: 24, enable_pin: 25,
              steps_per_ml: 3200, step_hz: 800}
    heater: {pin: 12, relay_pin: 16}
    sensors:
      ph:          {type: ezo, kind: ph, address: 0x63}
      temperature: {type: ds18b20, path: /sys/bus/w1/devices/28-0123456789ab/w1_slave}

A sensor the controller needs but the file lacks (level, reservoir) reads as absent: the
controller then refuses every dose (it never doses blind).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from rigwise.errors import InputError
from rigwise.file_model import FileModel
from rigwise.oi.drivers import Ds18b20, EzoSensor, GpioHeater, GpioPwmPump, GpioStepperPump
from rigwise.oi.hw import Actuator, Clock, Sensor, fit_pump_calibration, nominal_calibration
from rigwise.validate_input import load_yaml, read_user_text, validated


class PwmPump(FileModel):
    type: Literal["pwm"]
    pin: int = Field(ge=0, le=27)
    duty: float = Field(default=1.0, gt=0, le=1)
    flow_ml_per_s: float = Field(gt=0, description="Nominal flow until calibrated")
    calibration_runs: list[tuple[float, float]] = Field(
        default_factory=list, description="Weighed runs [seconds, grams]"
    )
    max_run_s: float = Field(default=120.0, gt=0)


class StepperPump(FileModel):
    type: Literal["stepper"]
    step_pin: int = Field(ge=0, le=27)
    dir_pin: int = Field(ge=0, le=27)
    enable_pin: int | None = Field(default=None, ge=0, le=27)
    steps_per_ml: float = Field(gt=0)
    step_hz: float = Field(gt=0, le=20_000)


class Heater(FileModel):
    pin: int = Field(ge=0, le=27)
    relay_pin: int | None = Field(default=None, ge=0, le=27)


class Ezo(FileModel):
    type: Literal["ezo"]
    kind: Literal["ph", "do", "ec"]
    address: int = Field(ge=0x03, le=0x77)


class W1Temperature(FileModel):
    type: Literal["ds18b20"]
    path: str


class DriverConfig(FileModel):
    i2c_bus: int = 1
    pumps: dict[str, Annotated[PwmPump | StepperPump, Field(discriminator="type")]]
    heater: Heater
    sensors: dict[str, Annotated[Ezo | W1Temperature, Field(discriminator="type")]]


@dataclass
class Devices:
    sensors: dict[str, Sensor]
    pumps: dict[str, Actuator]
    heater: Actuator


def load_config(path: str | Path) -> DriverConfig:
    file = Path(path)
    if not file.exists():  # a device or directory: read_user_text says which
        raise InputError(
            f"Drivers file {str(file)!r} not found.",
            hint="Write one as in docs/oi.md (section Real hardware).",
        )
    data = load_yaml(read_user_text(file, "drivers file"), f"Drivers file {str(file)!r}")
    return validated(  # each bad key with its value and rule, not pydantic's report
        DriverConfig,
        data,
        f"Bad drivers file {str(file)!r}",
        "See docs/oi.md (section Real hardware) for the fields.",
    )


def _pump(name: str, cfg: PwmPump | StepperPump, clock: Clock, factory: Any) -> Actuator:
    if isinstance(cfg, StepperPump):
        return GpioStepperPump(
            name,
            cfg.step_pin,
            cfg.dir_pin,
            cfg.enable_pin,
            cfg.steps_per_ml,
            cfg.step_hz,
            pin_factory=factory,
        )
    from rigwise.oi.hw import WeighedRun

    cal = (
        fit_pump_calibration(name, [WeighedRun(s, g) for s, g in cfg.calibration_runs])
        if cfg.calibration_runs
        else nominal_calibration(name, cfg.flow_ml_per_s)
    )
    return GpioPwmPump(
        name, cfg.pin, cal, clock, duty=cfg.duty, max_run_s=cfg.max_run_s, pin_factory=factory
    )


def build_devices(
    cfg: DriverConfig, clock: Clock, *, pin_factory: Any = None, bus: Any = None
) -> Devices:
    """The configured devices; ``pin_factory`` and ``bus`` are for tests (mock pins, fake bus)."""
    if bus is None and any(isinstance(s, Ezo) for s in cfg.sensors.values()):
        bus = open_bus(cfg.i2c_bus)
    sensors: dict[str, Sensor] = {}
    for name, s in cfg.sensors.items():
        sensors[name] = (
            EzoSensor(name, bus, s.address, s.kind, clock)
            if isinstance(s, Ezo)
            else Ds18b20(name, s.path, clock)
        )
    pumps = {name: _pump(name, p, clock, pin_factory) for name, p in cfg.pumps.items()}
    heater = GpioHeater(cfg.heater.pin, cfg.heater.relay_pin, pin_factory=pin_factory)
    return Devices(sensors, pumps, heater)


def open_bus(number: int) -> Any:
    try:
        from smbus2 import SMBus
    except ImportError as exc:
        raise InputError("smbus2 is not installed.", hint="pip install 'rigwise[oi]'") from exc
    try:
        return SMBus(number)
    except OSError as exc:
        raise InputError(
            f"Cannot open I2C bus {number} ({exc.strerror}).",
            hint="Enable I2C (raspi-config) or set i2c_bus in the drivers file.",
        ) from exc
