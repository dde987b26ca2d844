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
