"""Real drivers against gpiozero's own MockFactory pins and a fake smbus2-like I2C bus, and the
DS18B20 against w1_slave files; the YAML driver set builds them."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("gpiozero")
pytest.importorskip("smbus2")

from gpiozero.pins.mock import MockFactory, MockPWMPin

from rigwise.errors import InputError
from rigwise.oi.driver_config import build_devices, load_config
from rigwise.oi.drivers import (
    Ds18b20,
    EzoSensor,
    GpioHeater,
    GpioPwmPump,
    GpioStepperPump,
    crc8_maxim,
)
from rigwise.oi.hw import Quality, SimClock, nominal_calibration


class FakeBus:
    """An smbus2-like bus: records writes, answers reads from a per-address script."""

    def __init__(self, replies: dict[int, list[bytes]]) -> None:
        self.replies = replies
        self.writes: list[tuple[int, bytes]] = []

    def i2c_rdwr(self, *msgs: Any) -> None:
        for msg in msgs:
            if msg.flags & 1:  # I2C_M_RD
                if not self.replies.get(msg.addr):
                    raise OSError(121, "Remote I/O error")
                data = self.replies[msg.addr].pop(0).ljust(msg.len, b"\x00")
                for i in range(msg.len):
                    msg.buf[i] = data[i : i + 1]
            else:
                self.writes.append((msg.addr, bytes(msg)))


@pytest.fixture
def factory() -> MockFactory:
    return MockFactory(pin_class=MockPWMPin)


def test_pwm_pump_runs_for_the_calibrated_time_then_stops(factory: MockFactory) -> None:
    clock = SimClock()
    cal = nominal_calibration("feed", 0.02)
    pump = GpioPwmPump("feed", 18, cal, clock, duty=0.6, pin_factory=factory)
    pump.set(0.1)
    assert factory.pin(18).state == 0  # staged, not applied
    moved = pump.commit()
    assert moved == pytest.approx(0.1)
    assert clock.now() == pytest.approx(cal.seconds_for(0.1))
    states = [s.state for s in factory.pin(18).states]
    assert 0.6 in states and states[-1] == 0
    pump.set(10.0)  # 500 s: longer than the watchdog's 120 s -> refused, pin untouched
    assert pump.commit() == 0.0 and factory.pin(18).state == 0


def test_stepper_pump_steps_and_disables(factory: MockFactory) -> None:
    pump = GpioStepperPump(
        "drain", 23, 24, 25, steps_per_ml=100, step_hz=20_000, pin_factory=factory
    )
    assert factory.pin(25).state == 1  # disabled at rest (enable is active-low)
    pump.set(0.05)
    assert pump.commit() == pytest.approx(0.05)
    rises = [s for s in factory.pin(23).states if s.state == 1]
    assert len(rises) == 5
    assert factory.pin(24).state == 1 and factory.pin(25).state == 1


def test_heater_write_verify_and_relay(factory: MockFactory) -> None:
    heater = GpioHeater(12, relay_pin=16, pin_factory=factory)
    heater.set(0.42)
    assert heater.commit() == pytest.approx(0.42)
    assert factory.pin(16).state == 1
    heater.off()
    assert factory.pin(12).state == 0 and factory.pin(16).state == 0


@pytest.mark.parametrize(
    ("reply", "quality", "value"),
    [
        (b"\x017.38", Quality.OK, 7.38),
        (b"\x0114.92", Quality.OUT_OF_BAND, 14.92),
        (b"\x02", Quality.NAN, None),  # syntax error
        (b"\xfe", Quality.NOT_READY, None),  # still processing
        (b"\xff", Quality.NAN, None),  # no data
        (b"\x01abc", Quality.NAN, None),
        (b"\x07", Quality.CRC, None),  # garbage code: a corrupted frame
    ],
)
def test_ezo_ph_reply_codes(reply: bytes, quality: Quality, value: float | None) -> None:
    bus = FakeBus({0x63: [reply]})
    clock = SimClock()
    reading = EzoSensor("ph", bus, 0x63, "ph", clock).read()
    assert bus.writes == [(0x63, b"R")]
    assert clock.now() == pytest.approx(0.9)  # the datasheet's wait for a pH reading
    assert reading.quality is quality
    if value is not None:
        assert reading.value == pytest.approx(value)
    else:
        assert math.isnan(reading.value)


def test_ezo_missing_device_is_a_comms_fault_not_a_zero() -> None:
    reading = EzoSensor("do", FakeBus({}), 0x61, "do", SimClock()).read()
    assert reading.quality is Quality.COMMS and math.isnan(reading.value)


def test_ezo_temperature_compensation_command() -> None:
    bus = FakeBus({0x64: [b"\x01"]})
    assert EzoSensor("ec", bus, 0x64, "ec", SimClock()).compensate(37.0)
    assert bus.writes == [(0x64, b"T,37.0")]


def _w1(tmp_path: Path, scratch: bytes, milli_c: int, yes: bool = True) -> Path:
    hexes = " ".join(f"{b:02x}" for b in scratch)
    crc = scratch[-1]
    path = tmp_path / "w1_slave"
    path.write_text(f"{hexes} : crc={crc:02x} {'YES' if yes else 'NO'}\n{hexes} t={milli_c}\n")
    return path


def _scratch(raw: int) -> bytes:
    body = bytes([raw & 0xFF, raw >> 8, 0x4B, 0x46, 0x7F, 0xFF, 0x0C, 0x10])
    return body + bytes([crc8_maxim(body)])


def test_ds18b20_reads_and_rejects_bad_frames(tmp_path: Path) -> None:
    clock = SimClock()
    ok = Ds18b20("temperature", _w1(tmp_path, _scratch(0x0250), 37000), clock).read()
    assert ok.quality is Quality.OK and ok.value == pytest.approx(37.0)
    bad = bytearray(_scratch(0x0250))
    bad[0] ^= 0x01
    assert Ds18b20("t", _w1(tmp_path, bytes(bad), 37000), clock).read().quality is Quality.CRC
    no = Ds18b20("t", _w1(tmp_path, _scratch(0x0250), 37000, yes=False), clock).read()
    assert no.quality is Quality.CRC
    reset = Ds18b20("t", _w1(tmp_path, _scratch(0x0550), 85000), clock).read()
    assert reset.quality is Quality.NOT_READY  # 85.000 degC: the power-on reset value
    assert Ds18b20("t", tmp_path / "gone", clock).read().quality is Quality.COMMS


def test_crc8_maxim_known_vector() -> None:
    # ROM code of a DS18B20 from the Maxim application note 27 example: CRC byte 0xA2
    assert crc8_maxim(bytes([0x02, 0x1C, 0xB8, 0x01, 0x00, 0x00, 0x00])) == 0xA2


def test_yaml_driver_set_builds_working_devices(tmp_path: Path, factory: MockFactory) -> None:
    w1 = _w1(tmp_path, _scratch(0x0250), 37000)
    cfg_file = tmp_path / "rig.yaml"
    cfg_file.write_text(f"""
i2c_bus: 1
pumps:
  feed: {{type: pwm, pin: 18, duty: 0.8, flow_ml_per_s: 0.0167,
          calibration_runs: [[60, 1.01], [120, 2.02]]}}
  drain: {{type: stepper, step_pin: 23, dir_pin: 24, enable_pin: 25, steps_per_ml: 100,
           step_hz: 20000}}
heater: {{pin: 12, relay_pin: 16}}
sensors:
  ph: {{type: ezo, kind: ph, address: 0x63}}
  temperature: {{type: ds18b20, path: {w1}}}
""")
    bus = FakeBus({0x63: [b"\x017.31"]})
    devices = build_devices(load_config(cfg_file), SimClock(), pin_factory=factory, bus=bus)
    assert devices.sensors["ph"].read().value == pytest.approx(7.31)
    assert devices.sensors["temperature"].read().value == pytest.approx(37.0)
    feed = devices.pumps["feed"]
    feed.set(0.1)
    assert feed.commit() == pytest.approx(0.1, rel=1e-6)
    assert feed.calibration.calibration_id.startswith("cal-")  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (
            "pumps: {feed: {type: pwm, pin: 99, flow_ml_per_s: 1}}\nheater: {pin: 1}\nsensors: {}",
            "pin",
        ),
        ("pumps: {}\nheater: {pin: 1}\nsensors: {ph: {type: ezo, kind: orp, address: 99}}", "kind"),
        ("[not, a, mapping]", "Bad drivers file"),
        # before: pydantic's report cut at 3 lines: "3 validation errors for DriverConfig
        # pumps.feed.pwm.duty   Input should be less than or equal to 1 [type=less_than_equal,"
        (
            "pumps: {feed: {type: pwm, pin: 18, duty: 2, flow_ml_per_s: 1}}\nheater: {pin: 1}\n"
            "sensors: {}",
            "key 'pumps.feed.pwm.duty' = 2: Input should be less than or equal to 1.",
        ),
        # before: pin: true read as GPIO pin 1 (pydantic's lax mode takes a bool for an int)
        (
            "pumps: {feed: {type: pwm, pin: true, flow_ml_per_s: 1}}\nheater: {pin: 1}\n"
            "sensors: {}",
            "key 'pumps.feed.pwm.pin' = True: Value error, true is not a number; give a number.",
        ),
        (
            "pumps: {}\nheater: {pin: 12, relay_pin: false}\nsensors: {}",
            "key 'heater.relay_pin' = False: Value error, false is not a number",
        ),
        (
            "i2c_bus: true\npumps: {}\nheater: {pin: 1}\nsensors: {}",
            "key 'i2c_bus' = True: Value error, true is not a number",
        ),
    ],
)
def test_bad_driver_files_name_the_problem(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load_config(path)
    assert words in str(err.value)
