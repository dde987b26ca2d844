"""``FileModel``: a bool is no number in any subclass's number fields, a discriminated union of
subclasses included (a "*" validator could not be built on one)."""

from __future__ import annotations

from typing import Annotated, Literal

import pytest
from pydantic import Field, ValidationError

from rigwise.errors import validation_message
from rigwise.file_model import FileModel


class _Pwm(FileModel):
    type: Literal["pwm"]
    pin: int
    duty: float = 1.0


class _Stepper(FileModel):
    type: Literal["stepper"]
    steps_per_ml: float
    runs: list[tuple[float, float]] = Field(default_factory=list)


class _Inherits(_Pwm):
    enable_pin: int | None = None


class _Rig(FileModel):
    pumps: dict[str, Annotated[_Pwm | _Stepper, Field(discriminator="type")]]
    bus: int = 1
    named: bool = False


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"pumps": {"feed": {"type": "pwm", "pin": True}}}, "pumps.feed.pwm.pin"),
        ({"pumps": {"feed": {"type": "pwm", "pin": 1, "duty": False}}}, "pumps.feed.pwm.duty"),
        (
            {"pumps": {"d": {"type": "stepper", "steps_per_ml": True}}},
            "pumps.d.stepper.steps_per_ml",
        ),
        (
            {"pumps": {"d": {"type": "stepper", "steps_per_ml": 1, "runs": [[60, True]]}}},
            "pumps.d.stepper.runs",
        ),
        ({"pumps": {}, "bus": True}, "bus"),
    ],
)
def test_a_bool_is_no_number_naming_its_key(data: dict[str, object], key: str) -> None:
    with pytest.raises(ValidationError) as caught:
        _Rig.model_validate(data)
    message = validation_message(caught.value, "rig")
    assert f"key {key!r}" in message and "is not a number; give a number" in message


def test_a_subclass_checks_its_own_and_its_parents_fields() -> None:
    with pytest.raises(ValidationError, match="true is not a number"):
        _Inherits.model_validate({"type": "pwm", "pin": 1, "enable_pin": True})
    with pytest.raises(ValidationError, match="true is not a number"):
        _Inherits.model_validate({"type": "pwm", "pin": True})


def test_numbers_and_flags_read_as_before() -> None:
    rig = _Rig.model_validate(
        {"pumps": {"feed": {"type": "pwm", "pin": 18, "duty": 0.5}}, "bus": "2", "named": True}
    )
    assert rig.bus == 2 and rig.named is True
    assert rig.pumps["feed"] == _Pwm(type="pwm", pin=18, duty=0.5)
