"""``to_jsonable``: one converter for every result, shaped by field metadata."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from rigwise.serialize import (
    JSON_INLINE,
    JSON_INNER,
    JSON_KEY,
    JSON_OMIT_EMPTY,
    JSON_SKIP,
    to_jsonable,
)


@dataclass(frozen=True)
class _Part:
    seconds: float


@dataclass(frozen=True)
class _Result:
    json_properties: ClassVar[tuple[str, ...]] = ("total",)

    accelerator_id: str = field(metadata={JSON_KEY: "accelerator"})
    parts: Mapping[str, float] = field(metadata={JSON_INLINE: True})
    decode: _Part = field(metadata={JSON_INNER: {"seconds": "seconds_per_token"}})
    hidden: int = field(default=0, metadata={JSON_SKIP: True})
    alternatives: tuple[int, ...] = field(default=(), metadata={JSON_OMIT_EMPTY: True})

    @property
    def total(self) -> float:
        return sum(self.parts.values())


def test_field_metadata_shapes_the_json() -> None:
    result = _Result("rtx-4090", {"a_s": 1.0, "b_s": 2.0}, _Part(0.5))
    assert to_jsonable(result) == {
        "accelerator": "rtx-4090",
        "a_s": 1.0,
        "b_s": 2.0,
        "decode": {"seconds_per_token": 0.5},
        "total": 3.0,
    }
    with_alternatives = _Result("x", {}, _Part(1.0), alternatives=(1, 2))
    assert to_jsonable(with_alternatives)["alternatives"] == [1, 2]


def test_non_finite_numbers_and_numpy_become_plain_json() -> None:
    assert to_jsonable({"a": math.inf, "b": (1, 2), "c": np.int64(3)}) == {
        "a": None,
        "b": [1, 2],
        "c": 3,
    }
    assert to_jsonable(np.array([1.0, 2.0])) == [1.0, 2.0]


def test_field_metadata_properties_and_non_finite_floats_in_a_dataclasss_json() -> None:
    """Metadata (omitted empties, inlined mappings), properties, non-finite floats and nesting,
    in the keys' order."""
    results = [
        _Result("rtx-4090", {"a_s": 1.0, "b_s": math.nan}, _Part(0.5)),
        _Result("x", {}, _Part(math.inf), alternatives=(1, 2)),
    ]
    looped = [list(to_jsonable(r).items()) for r in results]
    assert looped[1] == [
        ("accelerator", "x"),
        ("decode", {"seconds_per_token": None}),
        ("alternatives", [1, 2]),
        ("total", 0),
    ]
