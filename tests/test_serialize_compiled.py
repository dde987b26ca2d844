"""The JSON that ``serialize_compiled`` writes per class is the JSON ``_dataclass``'s walk of
the fields makes: for every kind of plan, and for values a field's annotation does not name."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pytest

from rigwise import serialize
from rigwise.api.infer import plan_inference
from rigwise.api.train import plan_training
from rigwise.serialize import JSON_INLINE, JSON_INNER, JSON_NULL_IF_EMPTY, to_jsonable


@contextmanager
def _walked() -> Iterator[None]:
    """``to_jsonable`` as before the compiled converters: ``_dataclass`` for every class."""
    saved_converters, saved_compiled = serialize._CONVERTERS, serialize._compiled
    serialize._CONVERTERS = {}
    serialize._compiled = lambda cls: serialize._dataclass  # type: ignore[assignment,return-value]
    try:
        yield
    finally:
        serialize._CONVERTERS, serialize._compiled = saved_converters, saved_compiled


def _both(value: object) -> tuple[str, str]:
    """The JSON text (keys in order) of ``value``, compiled (each class's code written at its
    first conversion) and walked."""
    saved = serialize._CONVERTERS, serialize.COMPILE_AFTER
    serialize._CONVERTERS, serialize.COMPILE_AFTER = {}, 1
    try:
        to_jsonable(value)  # writes the code of every class it holds
        compiled = json.dumps(to_jsonable(value))
        assert all("_warming" not in repr(c) for c in serialize._CONVERTERS.values())
    finally:
        serialize._CONVERTERS, serialize.COMPILE_AFTER = saved
    with _walked():
        walked = json.dumps(to_jsonable(value))
    return compiled, walked


_PLANS = {
    "fits": {"model": "llama-3.1-8b", "on": "rtx-4090"},
    "does not fit": {"model": "llama-3.1-70b", "on": "rtx-4090"},
    "batched, budget": {
        "model": "qwen2.5-7b", "on": "h100-sxm", "concurrency": 16, "latency_budget": "50ms",
    },
    "power limit": {"model": "llama-3.1-8b", "on": "rtx-4090", "power_limit": 300},
    "offload": {"model": "llama-3.1-70b", "on": "rtx-4090", "quant": "Q4_K_M", "offload": "auto"},
    "tensor parallel": {"model": "llama-3.1-70b", "on": "2x rtx-3090", "split": "tensor"},
    "disaggregated": {
        "model": "llama-3.1-8b", "on": "8x h100",
        "disagg": {"prefill": {"tp": 4}, "decode": {"tp": 4}}, "levers": False,
    },
}  # fmt: skip


@pytest.mark.parametrize("name", list(_PLANS))
def test_inference_plans_json_is_the_walked_json(name: str) -> None:
    compiled, walked = _both(plan_inference(**_PLANS[name]))
    assert compiled == walked


@pytest.mark.parametrize("zero", [0, 3])
def test_training_plans_json_is_the_walked_json(zero: int) -> None:
    plan = plan_training(model="llama-3.1-8b", on="8x h100-sxm", zero=zero)
    compiled, walked = _both(plan)
    assert compiled == walked


@dataclass(frozen=True)
class _Inner:
    seconds: float


@dataclass(frozen=True)
class _Odd:
    """Fields whose values are not of their annotated type, and every kind of metadata."""

    json_properties: ClassVar[tuple[str, ...]] = ("ratio", "label", "twice")

    rate: float
    name: str
    count: int
    flag: bool
    sizes: tuple[int, ...]
    table: dict[str, float]
    parts: Mapping[str, float] = field(metadata={JSON_INLINE: True})
    inner: _Inner = field(metadata={JSON_INNER: {"seconds": "seconds_per_token"}})
    note: str = field(default="", metadata={JSON_NULL_IF_EMPTY: True})

    @property
    def ratio(self) -> float:
        return self.rate * 2

    @property
    def label(self) -> str:
        return self.name

    @functools.cached_property
    def twice(self) -> float:
        return self.rate * 2


_ODD: list[dict[str, Any]] = [
    {"rate": 1.5, "name": "a", "count": 2, "flag": True, "sizes": (1, 2), "table": {"x": 1.0}},
    {"rate": math.nan, "name": None, "count": 2.5, "flag": 1, "sizes": [1], "table": {1: 2.0}},
    {"rate": np.float32(2.0), "name": 3, "count": np.int64(4), "flag": None, "sizes": None,
     "table": {"x": math.inf}},
    {"rate": 7, "name": "b", "count": -math.inf, "flag": False, "sizes": (), "table": {}},
]  # fmt: skip


@pytest.mark.parametrize("values", _ODD)
def test_values_of_another_type_than_annotated_are_converted_alike(values: dict[str, Any]) -> None:
    odd = _Odd(**values, parts={"p": math.inf, "q": 1.0}, inner=_Inner(math.nan))
    compiled, walked = _both(odd)
    assert compiled == walked
    assert json.loads(compiled)["inner"] == {"seconds_per_token": None}


def test_a_finish_registered_after_the_first_conversion_runs() -> None:
    """The class's finish is looked up at each conversion, not fixed when its code is made."""

    @dataclass(frozen=True)
    class _Late:
        value: float

    assert to_jsonable(_Late(1.0)) == {"value": 1.0}
    serialize.register_json_finish(_Late, lambda data: {**data, "added": True})
    try:
        assert to_jsonable(_Late(1.0)) == {"value": 1.0, "added": True}
    finally:
        del serialize._FINISH[_Late]


def test_a_class_is_walked_until_converted_often_then_compiled() -> None:
    """The first conversions of a class walk its fields (one plan's JSON writes no code); from
    the COMPILE_AFTER-th on, its written function converts it."""

    @dataclass(frozen=True)
    class _Often:
        value: float

    for _ in range(serialize.COMPILE_AFTER - 1):
        assert to_jsonable(_Often(math.inf)) == {"value": None}
    assert serialize._CONVERTERS[_Often].__qualname__.startswith("_warming")
    assert to_jsonable(_Often(2.0)) == {"value": 2.0}
    assert serialize._CONVERTERS[_Often].__code__.co_filename.endswith("._Often>")
