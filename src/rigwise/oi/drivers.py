"""Real drivers for a Raspberry Pi: peristaltic pumps through gpiozero (a PWM motor driver or a
step/dir stepper driver), Atlas Scientific EZO sensors over I2C through smbus2, a DS18B20
temperature probe through the kernel's 1-Wire driver. gpiozero and smbus2 are imported here
only, lazily (`pip install 'rigwise[oi]'`); tests pass gpiozero's MockFactory and a fake bus.

EZO I2C protocol (Atlas Scientific EZO pH/DO/EC datasheets, "I2C mode"): write the ASCII
command (``R`` = one reading), wait (900 ms for pH, 600 ms for DO/EC), read up to 31 bytes: the
first is a response code (1 success, 2 syntax error, 254 still processing, 255 no data), then
the ASCII reading, NUL-terminated. Default addresses: DO 0x61 (97), pH 0x63 (99), EC 0x64 (100).
DS18B20 (Maxim datasheet): -55..+125 degC; 85.000 degC is its power-on reset value (a read
before any conversion) and is treated as a fault; w1_slave ends its first line with ``YES`` when
the scratchpad's CRC-8 (polynomial x^8+x^5+x^4+1) matched, and we check the CRC again here.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from rigwise.oi.hw import Clock, PumpCalibration, Quality, Reading, checked

EZO_WAIT_S = {"ph": 0.9, "do": 0.6, "ec": 0.6}
EZO_UNITS = {"ph": ("pH", 0.0, 14.0), "do": ("mg/L", 0.0, 100.0), "ec": ("uS/cm", 0.0, 2e5)}
EZO_CODES = {2: Quality.NAN, 254: Quality.NOT_READY, 255: Quality.NAN}
DS18B20_RESET_C = 85.0


class GpioPwmPump:
    """A DC peristaltic pump on a PWM motor driver: on at ``duty`` for the calibrated time."""

    def __init__(
        self,
        name: str,
        pin: int,
        calibration: PumpCalibration,
        clock: Clock,
        *,
        duty: float = 1.0,
        max_run_s: float = 120.0,
        pin_factory: Any = None,
    ) -> None:
        from gpiozero import PWMOutputDevice

        self.name, self.calibration, self.clock = name, calibration, clock
        self.duty, self.max_run_s = duty, max_run_s
        self.device = PWMOutputDevice(pin, pin_factory=pin_factory)
        self._staged = 0.0

    def set(self, value: float) -> None:
        self._staged = max(0.0, value)

    def commit(self) -> float:
        """Run the staged volume; a run longer than ``max_run_s`` is refused (watchdog)."""
        staged, self._staged = self._staged, 0.0
        seconds = self.calibration.seconds_for(staged)
        if seconds <= 0 or seconds > self.max_run_s:
            return 0.0
        try:
            self.device.value = self.duty
            self.clock.sleep(seconds)
        finally:
            self.device.off()
        return self.calibration.volume_for(seconds)

    def off(self) -> None:
        self._staged = 0.0
        self.device.off()


class GpioStepperPump:
    """A stepper peristaltic pump on a step/dir/enable driver (A4988, DRV8825, TMC2208)."""

    def __init__(
        self,
        name: str,
        step_pin: int,
        dir_pin: int,
        enable_pin: int | None,
        steps_per_ml: float,
        step_hz: float,
        *,
        max_steps: int = 200_000,
        pin_factory: Any = None,
    ) -> None:
        from gpiozero import DigitalOutputDevice

        self.name, self.steps_per_ml, self.step_hz, self.max_steps = (
            name,
            steps_per_ml,
            step_hz,
            max_steps,
        )
        self.step = DigitalOutputDevice(step_pin, pin_factory=pin_factory)
        self.direction = DigitalOutputDevice(dir_pin, pin_factory=pin_factory)
        # enable is active-low on these drivers: "on" (high) disables the motor
        self.disable = (
            None
            if enable_pin is None
            else DigitalOutputDevice(enable_pin, initial_value=True, pin_factory=pin_factory)
        )
        self._staged = 0.0

    def set(self, value: float) -> None:
        self._staged = max(0.0, value)

    def commit(self) -> float:
        staged, self._staged = self._staged, 0.0
        steps = round(staged * self.steps_per_ml)
        if steps <= 0 or steps > self.max_steps:
            return 0.0
        half = 0.5 / self.step_hz
        try:
            self.direction.on()
            if self.disable is not None:
                self.disable.off()
            self.step.blink(on_time=half, off_time=half, n=steps, background=False)
        finally:
            self.off()
        return steps / self.steps_per_ml

    def off(self) -> None:
        self._staged = 0.0
        self.step.off()
        if self.disable is not None:
            self.disable.on()


class GpioHeater:
    """A heater on a PWM MOSFET, with an optional relay on its supply (the hard safe state)."""

    def __init__(self, pin: int, relay_pin: int | None = None, pin_factory: Any = None) -> None:
        from gpiozero import DigitalOutputDevice, PWMOutputDevice

        self.name = "heater"
        self.device = PWMOutputDevice(pin, pin_factory=pin_factory)
        self.relay = (
            None if relay_pin is None else DigitalOutputDevice(relay_pin, pin_factory=pin_factory)
        )
        self._staged = 0.0

    def set(self, value: float) -> None:
        self._staged = min(1.0, max(0.0, value))

    def commit(self) -> float:
        if self.relay is not None:
            self.relay.on()
        self.device.value = self._staged
        return float(self.device.value)  # write-verify: what the pin really holds

    def off(self) -> None:
        self._staged = 0.0
        self.device.off()
        if self.relay is not None:
            self.relay.off()


class EzoSensor:
    """An Atlas Scientific EZO circuit in I2C mode (pH, DO or EC)."""

    def __init__(self, name: str, bus: Any, address: int, kind: str, clock: Clock) -> None:
        if kind not in EZO_WAIT_S:
            raise ValueError(f"EZO kind {kind!r}: use one of {', '.join(EZO_WAIT_S)}")
        self.name, self.bus, self.address, self.kind, self.clock = name, bus, address, kind, clock
        self.unit, self.low, self.high = EZO_UNITS[kind]

    def command(self, text: str, wait_s: float) -> tuple[int, str]:
        from smbus2 import i2c_msg

        self.bus.i2c_rdwr(i2c_msg.write(self.address, text.encode("ascii")))
        self.clock.sleep(wait_s)
        reply = i2c_msg.read(self.address, 31)
        self.bus.i2c_rdwr(reply)
        raw = bytes(reply)
        return raw[0], raw[1:].split(b"\x00", 1)[0].decode("ascii", "replace")

    def read(self) -> Reading:
        t = self.clock.now()
        try:
            code, payload = self.command("R", EZO_WAIT_S[self.kind])
        except OSError:  # errno 121 Remote I/O error: nobody answered at this address
            return Reading(self.name, math.nan, self.unit, Quality.COMMS, t)
        if code != 1:
            return Reading(self.name, math.nan, self.unit, EZO_CODES.get(code, Quality.CRC), t)
        try:
            value = float(payload.split(",")[0])
        except ValueError:
            return Reading(self.name, math.nan, self.unit, Quality.NAN, t)
        return checked(self.name, value, self.unit, t, self.low, self.high)

    def compensate(self, temperature_c: float) -> bool:
        """Send the temperature compensation (``T,37.0``); True when the circuit accepted it."""
        code, _ = self.command(f"T,{temperature_c:.1f}", 0.3)
        return code == 1


def crc8_maxim(data: bytes) -> int:
    """Dallas/Maxim 1-Wire CRC-8 (x^8 + x^5 + x^4 + 1, reflected 0x8C)."""
    crc = 0
    for byte in data:
        for _ in range(8):
            mix = (crc ^ byte) & 1
            crc >>= 1
            if mix:
                crc ^= 0x8C
            byte >>= 1
    return crc


class Ds18b20:
    """A DS18B20 read through the w1-therm sysfs file (``/sys/bus/w1/devices/28-*/w1_slave``)."""

    def __init__(self, name: str, path: str | Path, clock: Clock) -> None:
        self.name, self.path, self.clock = name, Path(path), clock

    def read(self) -> Reading:
        t = self.clock.now()
        try:
            lines = self.path.read_text().strip().splitlines()
        except OSError:
            return Reading(self.name, math.nan, "degC", Quality.COMMS, t)
        try:
            scratch = bytes(int(h, 16) for h in lines[0].split(":")[0].split())
            good = lines[0].endswith("YES") and len(scratch) == 9 and crc8_maxim(scratch) == 0
            value = int(lines[1].split("t=")[1]) / 1000.0
        except (IndexError, ValueError):
            return Reading(self.name, math.nan, "degC", Quality.NAN, t)
        if not good:
            return Reading(self.name, math.nan, "degC", Quality.CRC, t)
        if value == DS18B20_RESET_C:
            return Reading(self.name, value, "degC", Quality.NOT_READY, t)
        return checked(self.name, value, "degC", t, -55.0, 125.0)
