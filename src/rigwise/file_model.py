"""``FileModel``: the pydantic base of what a user's file holds (rig, cluster, experiment and
job files): unknown keys are errors, and a bool is no number (pydantic's lax mode reads
``count: true`` as 1). Not for a model with a discriminator field (pydantic refuses a "before"
validator on one: oi/driver_config.py)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

from rigwise.option_fields import no_flag, number_not_flag


class FileModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="before")
    @classmethod
    def _no_flags(cls, value: object, info: ValidationInfo) -> object:
        field = cls.model_fields.get(info.field_name or "")
        if field is not None and number_not_flag(field.annotation):
            return no_flag(None)(value)
        return value
