"""``FileModel``: the pydantic base of what a user's file holds (rig, cluster, experiment, job,
drivers, policy and fake-machine files): unknown keys are errors, and a bool is no number
(pydantic's lax mode reads ``count: true`` as 1 and ``pin: true`` as GPIO pin 1)."""

from __future__ import annotations

import inspect
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

from rigwise.option_fields import no_flag, number_not_flag


class FileModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Each subclass refuses bools in its own number fields, named field by field: a "*"
        validator would reach a union's discriminator (``type: Literal['pwm']``), which pydantic
        refuses to build; a ``Literal`` field takes no number, so it is left out. Pydantic
        collects the validator from the class right after this runs."""
        super().__init_subclass__(**kwargs)
        own = inspect.get_annotations(cls)
        names = [name for name, hint in own.items() if "Literal[" not in str(hint)]
        if names:
            check = field_validator(*names, mode="before", check_fields=False)
            setattr(cls, f"_no_flags_{cls.__name__}", check(classmethod(_no_flags)))


def _no_flags(cls: type[BaseModel], value: object, info: ValidationInfo) -> object:
    field = cls.model_fields.get(info.field_name or "")
    if field is not None and number_not_flag(field.annotation):
        return no_flag(None)(value)
    return value
