"""Plain-JSON views of results: dataclasses (via ``to_dict`` when they have one), enums,
tuples and non-finite floats. Used by the CLI's ``--json`` and the web API alike."""

from __future__ import annotations

import dataclasses
import enum
import math
from typing import Any


def to_jsonable(value: Any) -> Any:
    """Dataclasses, enums, tuples and non-finite floats to plain JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if hasattr(value, "to_dict"):
            return to_jsonable(value.to_dict())
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "model_dump"):
        return to_jsonable(value.model_dump())
    return value


def nonsense_numbers(document: Any, key: str = "") -> list[tuple[str, float]]:
    """(key, value) of every number in a JSON document that no plan can mean: negative or not
    finite. Every quantity rigwise reports (bytes, seconds, tokens/s, dollars, counts) is >= 0;
    the fuzz tests hold every JSON answer to that."""
    if isinstance(document, dict):
        return [item for k, v in document.items() for item in nonsense_numbers(v, str(k))]
    if isinstance(document, list):
        return [item for v in document for item in nonsense_numbers(v, key)]
    if isinstance(document, int | float) and not isinstance(document, bool):
        number = float(document)
        return [(key, number)] if not math.isfinite(number) or number < 0 else []
    return []
