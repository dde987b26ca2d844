"""A lab's constants file (``--constants``): each value is a plain, finite number."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigwise.errors import RigwiseError
from rigwise.oi.constants import load_constants


@pytest.mark.parametrize(
    ("value", "says"),
    [
        # before: each was read (Python's float() takes true as 1.0, '1_000' as 1000.0, .inf)
        ("true", "true is not a number"),
        ("'1_000'", "'1_000' is not a plain number"),
        (".inf", "inf is not a finite number"),
        (".nan", "nan is not a finite number"),
    ],
)
def test_a_value_that_is_no_plain_number_is_named(tmp_path: Path, value: str, says: str) -> None:
    path = tmp_path / "plant.yaml"
    path.write_text(
        f"rows:\n  - {{key: exchange_volume_ml, value: {value}, unit: mL, source: lab}}\n"
    )
    with pytest.raises(RigwiseError, match=says) as caught:
        load_constants(path)
    assert "exchange_volume_ml" in caught.value.message


def test_a_plain_value_reads(tmp_path: Path) -> None:
    path = tmp_path / "plant.yaml"
    path.write_text("rows:\n  - {key: exchange_volume_ml, value: '2.5', unit: mL, source: lab}\n")
    assert load_constants(path)["exchange_volume_ml"] == 2.5


@pytest.mark.parametrize(
    ("rows", "version", "says"),
    [
        # before: an internal error (ValueError from int()) instead of naming the value
        ("", "abc", "version 'abc' is not a whole number"),
        # before: ZeroDivisionError in the health index during `oi simulate`
        ("  - {key: exchange_interval_s, value: 0, unit: s, source: lab}\n", 1, "must be > 0"),
        # before: read; a negative interval scheduled an exchange every step
        ("  - {key: exchange_interval_s, value: -5, unit: s, source: lab}\n", 1, "must be > 0"),
        ("  - {key: reservoir_min_ml, value: -1, unit: mL, source: lab}\n", 1, "must be >= 0"),
        # before: the second row silently won
        ("  - {key: pid_kp, value: 1, unit: x, source: a}\n" * 2, 1, "'pid_kp' appears twice"),
    ],
)
def test_a_constant_out_of_its_domain_is_named(
    tmp_path: Path, rows: str, version: object, says: str
) -> None:
    path = tmp_path / "plant.yaml"
    base = "  - {key: exchange_volume_ml, value: 1, unit: mL, source: lab}\n"
    path.write_text(f"version: {version}\nrows:\n{base}{rows}")
    with pytest.raises(RigwiseError, match=says):
        load_constants(path)


def _rows(**values: float) -> str:
    return "".join(
        f"  - {{key: {key}, value: {value}, unit: x, source: lab}}\n"
        for key, value in values.items()
    )


@pytest.mark.parametrize(
    ("values", "says"),
    [
        # before: read; the heater was never forced off below 1000 degC (tier 2 switched off)
        (
            {"temperature_heater_off_c": 1000, "temperature_safe_state_c": 39.5},
            "need temperature_heater_off_c <= temperature_safe_state_c",
        ),
        (
            {"temperature_band_high_c": 40, "temperature_heater_off_c": 38.5},
            "need temperature_band_high_c <= temperature_heater_off_c",
        ),
        ({"ph_band_low": 7.6, "ph_band_high": 7.0}, "need ph_band_low < ph_band_high"),
        (
            {"housing_high_level_ml": 6, "housing_capacity_ml": 5},
            "need housing_high_level_ml <= housing_capacity_ml",
        ),
        ({"recycle_max_ratio": 3}, "recycle_max_ratio = 3 is a share: 0 to 1"),
        ({"temperature_safe_state_c": 90}, "past 42 degC"),
    ],
)
def test_constants_that_would_switch_an_interlock_off_are_refused(
    tmp_path: Path, values: dict[str, float], says: str
) -> None:
    path = tmp_path / "plant.yaml"
    path.write_text("rows:\n" + _rows(**values))
    with pytest.raises(RigwiseError, match=says):
        load_constants(path)


def test_the_packaged_constants_keep_every_order() -> None:
    from rigwise.oi.constants import ORDERED

    c = load_constants()
    for low, high, _ in ORDERED:
        assert c[low] <= c[high], (low, high)
