"""Plain-JSON views of results, written once: ``to_jsonable``.

Used by the CLI's ``--json``, ``--queries``, the web API and the grid alike. A dataclass becomes
its fields in order, then the properties its class names in ``json_properties``. Field metadata
shapes the JSON without a hand-written ``to_dict``:

- ``JSON_KEY``: the field's key in the JSON (``{JSON_KEY: "accelerator"}``);
- ``JSON_SKIP``: the field is left out (internal bookkeeping);
- ``JSON_OMIT_EMPTY``: left out when ``None`` or empty;
- ``JSON_NULL_IF_EMPTY``: an empty value (``""``, ``()``) is written as ``null``;
- ``JSON_INLINE``: a mapping field's items become keys of the object itself;
- ``JSON_INNER``: rename keys of the field's own JSON object (``{"seconds": "seconds_per_token"}``).

A module that makes a kind of result may register one function that finishes its JSON
(``register_json_finish``: the P10-P90 ranges beside a plan's numbers), so this module needs
no import of the layers above it.

Enums become their values, tuples and sets lists, non-finite floats ``null``, pydantic models
their ``model_dump()``. Classes that still define ``to_dict`` are asked for it.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, TypeAlias

_isfinite = math.isfinite

JSON_KEY = "json_key"
JSON_SKIP = "json_skip"
JSON_OMIT_EMPTY = "json_omit_empty"
JSON_NULL_IF_EMPTY = "json_null_if_empty"
JSON_INLINE = "json_inline"
JSON_INNER = "json_inner"

Json: TypeAlias = "bool | int | float | str | list[Json] | dict[str, Json] | None"

_OMIT, _NULL, _INLINE = 1, 2, 4  # field flags, from the metadata keys above
# (attribute, JSON key, flags, JSON_INNER renames or None) per field, then the properties
_Plan: TypeAlias = tuple[
    tuple[tuple[str, str, int, "Mapping[str, str] | None"], ...], tuple[str, ...]
]
_PLANS: dict[type, _Plan] = {}
_FINISH: dict[type, Callable[[dict[str, Any]], dict[str, Any]]] = {}


def register_json_finish(cls: type, finish: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """``finish(json_object)`` runs on every JSON object made from a ``cls`` instance."""
    _FINISH[cls] = finish


def _plan(cls: type) -> _Plan:
    """How a dataclass's JSON is made, read once per class from its fields' metadata (the
    ``--queries`` path serialises thousands of plans: no metadata lookups per object)."""
    found = _PLANS.get(cls)
    if found is None:
        fields = []
        for f in dataclasses.fields(cls):
            meta = f.metadata
            if meta.get(JSON_SKIP):
                continue
            flags = (
                (_OMIT if meta.get(JSON_OMIT_EMPTY) else 0)
                | (_NULL if meta.get(JSON_NULL_IF_EMPTY) else 0)
                | (_INLINE if meta.get(JSON_INLINE) else 0)
            )
            inner = meta.get(JSON_INNER)
            renames = inner if isinstance(inner, Mapping) else None
            fields.append((f.name, str(meta.get(JSON_KEY, f.name)), flags, renames))
        found = (tuple(fields), tuple(getattr(cls, "json_properties", ())))
        _PLANS[cls] = found
    return found


def _empty(value: object) -> bool:
    return value is None or (isinstance(value, str | tuple | list | dict) and not value)


def _dataclass(value: object) -> dict[str, Json]:
    cls = type(value)
    fields, properties = _plan(cls)
    out: dict[str, Json] = {}
    for field in fields:
        name, key, flags, inner = field
        item = getattr(value, name)
        kind = type(item)
        if flags or inner is not None:
            _shaped(out, item, field)
        elif kind is float:
            out[key] = item if _isfinite(item) else None
        elif kind is str or kind is int or kind is bool or item is None:
            out[key] = item
        else:
            out[key] = to_jsonable(item)
    for name in properties:
        out[name] = to_jsonable(getattr(value, name))
    finish = _FINISH.get(cls)
    return out if finish is None else finish(out)


def _shaped(
    out: dict[str, Json], item: object, field: tuple[str, str, int, Mapping[str, str] | None]
) -> None:
    """A field with JSON metadata (see the module's docstring) into ``out``."""
    _, key, flags, inner = field
    if flags & _OMIT and _empty(item):
        return
    converted = None if flags & _NULL and _empty(item) else to_jsonable(item)
    if inner is not None and isinstance(converted, dict):
        converted = {str(inner.get(k, k)): v for k, v in converted.items()}
    if flags & _INLINE and isinstance(converted, dict):
        out.update(converted)
    else:
        out[key] = converted


class JsonObject:
    """Base of results whose JSON is made here: ``obj.to_dict()`` is ``to_jsonable(obj)``
    (for callers that want the object form), never written by hand."""

    json_generic: ClassVar[bool] = True

    def to_dict(self) -> dict[str, Any]:
        return _dataclass(self)


def _mapping(value: Mapping[Any, Any]) -> dict[str, Any]:
    """A mapping's JSON: its values converted as in ``_items``, its keys as strings (they
    nearly always are: ``str()`` on each would cost more than the check)."""
    out = dict(zip(value, _items(value.values()), strict=True))
    for key in out:
        if type(key) is not str:
            return {str(k): v for k, v in out.items()}
    return out


def _items(value: Iterable[Any]) -> list[Any]:
    """The JSON of a tuple's, list's or mapping's values, their plain numbers and strings
    converted inline (no call per value: a plan holds hundreds of them, and --queries
    serialises thousands of plans)."""
    out = []
    for item in value:
        kind = type(item)
        if kind is float:
            item = item if _isfinite(item) else None
        elif not (kind is str or kind is int or kind is bool or item is None):
            item = to_jsonable(item)
        out.append(item)
    return out


def to_jsonable(value: object) -> Any:
    """Dataclasses, mappings, enums, tuples and non-finite floats to plain JSON values (a
    ``Json``; typed ``Any`` so that callers may index into the object they know they made)."""
    cls = type(value)
    if cls is str or cls is int or cls is bool or value is None:  # the common cases, first
        return value
    if cls is float:
        return value if math.isfinite(value) else None  # type: ignore[arg-type]
    if cls is dict:
        return _mapping(value)  # type: ignore[arg-type]
    if cls is tuple or cls is list:
        return _items(value)  # type: ignore[arg-type]
    convert = _CONVERTERS.get(cls)  # a dataclass seen before
    if convert is not None:
        return convert(value)
    if isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if hasattr(cls, "__dataclass_fields__"):
        convert = _converter(cls)
        if convert is not None:
            _CONVERTERS[cls] = convert
            return convert(value)
        to_dict = getattr(value, "to_dict", None)
        if to_dict is not None and not getattr(value, "json_generic", False):
            return to_jsonable(to_dict())  # a class that still writes its own
        return _dataclass(value)
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value)
    model_dump = getattr(value, "model_dump", None)
    if model_dump is not None:
        return to_jsonable(model_dump())
    tolist = getattr(value, "tolist", None)  # numpy scalars and arrays
    if tolist is not None:
        return to_jsonable(tolist())
    return str(value)


_CONVERTERS: dict[type, Callable[[Any], Any]] = {}


def _converter(cls: type) -> Callable[[Any], Any] | None:
    """How ``to_jsonable`` converts a dataclass, decided once per class from the class (the
    checks it makes on each object are then skipped): the class's own ``to_dict``, unless it
    is ``json_generic``, else ``_dataclass``. None where an object could answer otherwise
    than its class (a field named like the attributes asked, a ``json_generic`` not a bool)."""
    generic = getattr(cls, "json_generic", False)
    fields = getattr(cls, "__dataclass_fields__", {})
    if "to_dict" in fields or "json_generic" in fields or not isinstance(generic, bool):
        return None
    if getattr(cls, "to_dict", None) is not None and not generic:
        return _own_dict  # a class that still writes its own
    return _dataclass


def _own_dict(value: Any) -> Any:
    return to_jsonable(value.to_dict())


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
