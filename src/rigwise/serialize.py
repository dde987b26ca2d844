"""Plain-JSON views of results, written once: ``to_jsonable``.

Used by the CLI's ``--json``, ``--queries``, the web API and the grid alike. A dataclass becomes
its fields in order, then the properties its class names in ``json_properties`` (or, where its
class names ``json_keys``, those attributes in that order). Field metadata
shapes the JSON without a hand-written ``to_dict``:

- ``JSON_KEY``: the field's key in the JSON (``{JSON_KEY: "accelerator"}``);
- ``JSON_SKIP``: the field is left out (internal bookkeeping);
- ``JSON_OMIT_EMPTY``: left out when ``None`` or empty;
- ``JSON_NULL_IF_EMPTY``: an empty value (``""``, ``()``) is written as ``null``;
- ``JSON_INLINE``: a mapping field's items become keys of the object itself;
- ``JSON_INNER``: rename keys of the field's own JSON object (``{"seconds": "seconds_per_token"}``).

A module that makes a kind of result may register one function that finishes its JSON
(``register_json_finish``: the P10-P90 ranges beside a plan's numbers), so this module needs
no import of the layers above it. ``to_jsonable_part`` makes only some keys of an object's
JSON (``--fields``), the same values the whole JSON holds.

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
Adds: TypeAlias = "Mapping[str, tuple[str, ...]]"
_FINISH: dict[type, Callable[[dict[str, Any]], dict[str, Any]]] = {}
# per class: finish(instance, part of its JSON), and the dotted keys the finish adds
_FINISH_PART: dict[type, tuple[Callable[[Any, dict[str, Any]], dict[str, Any]], Adds]] = {}
_GENERIC: dict[type, bool] = {}


def register_json_finish(
    cls: type,
    finish: Callable[[dict[str, Any]], dict[str, Any]],
    part: Callable[[Any, dict[str, Any]], dict[str, Any]] | None = None,
    adds: Adds | None = None,
) -> None:
    """``finish(json_object)`` runs on every JSON object made from a ``cls`` instance.
    ``part(instance, json_part)`` does the same to a part of it (``to_jsonable_part``);
    ``adds``: the dotted keys the finish adds or changes (``intervals.*``: ``intervals`` and
    any key below it), each with the dotted keys it is made from (a part that holds an added
    key holds them)."""
    _FINISH[cls] = finish
    if part is not None:
        _FINISH_PART[cls] = (part, adds or {})


def finish_adds(cls: type) -> Adds:
    """The dotted keys that the finish registered for ``cls`` adds to its JSON, each with the
    dotted keys it is made from."""
    found = _FINISH_PART.get(cls)
    return found[1] if found is not None else {}


# Some keys of a JSON object, each with the keys wanted below it (None: all of its value).
KeyTree: TypeAlias = "Mapping[str, KeyTree | None]"


def to_jsonable_part(value: object, keys: KeyTree, finish: bool) -> dict[str, Any]:
    """The part of ``value``'s JSON object that ``keys`` name (those it has), each value as
    the whole JSON holds it: a dataclass made by ``_dataclass`` is entered only along
    ``keys``, any other value is converted whole. With ``finish``, the class's ``part``
    finish adds its keys to the part (``keys`` must name what they are made from: see
    ``register_json_finish``); the whole JSON where the class has a finish but no part."""
    cls = type(value)
    part = _FINISH_PART.get(cls) if finish else None
    if (finish and part is None and cls in _FINISH) or not _generic(cls):
        whole: dict[str, Any] = to_jsonable(value)
        return whole
    by_key, inlined = _index(cls)
    out: dict[str, Json] = {}
    for key, below in keys.items():
        if key in by_key:
            field = by_key[key]
            if field is None:  # a property
                out[key] = to_jsonable(getattr(value, key))
            else:
                _part_of_field(out, getattr(value, field[0]), field, below)
    for field in inlined:
        _part_of_field(out, getattr(value, field[0]), field, None)
    return out if part is None else part[0](value, out)


_Field: TypeAlias = tuple[str, str, int, "Mapping[str, str] | None"]
_INDEX: dict[type, tuple[dict[str, _Field | None], tuple[_Field, ...]]] = {}


def _index(cls: type) -> tuple[dict[str, _Field | None], tuple[_Field, ...]]:
    """A generic class's fields by JSON key (None: a property), and its inlined fields."""
    found = _INDEX.get(cls)
    if found is None:
        fields, properties = _plan(cls)
        by_key: dict[str, _Field | None] = {f[1]: f for f in fields if not f[2] & _INLINE}
        by_key.update(dict.fromkeys(properties))  # written after the fields: they win
        found = (by_key, tuple(f for f in fields if f[2] & _INLINE))
        _INDEX[cls] = found
    return found


def _part_of_field(
    out: dict[str, Json], item: object, field: _Field, below: KeyTree | None
) -> None:
    """The part of one field's JSON that ``below`` names (None: all of it) into ``out``."""
    _, key, flags, inner = field
    kind = type(item)
    if below is None or flags & _INLINE or kind in _FINISH or not _generic(kind):
        _shaped(out, item, field)
        return
    if inner is not None:  # the field's JSON renames its keys: ask for them by their own
        back = {new: old for old, new in inner.items()}
        below = {back.get(k, k): v for k, v in below.items()}
    converted = to_jsonable_part(item, below, finish=False)
    if inner is not None:
        converted = {str(inner.get(k, k)): v for k, v in converted.items()}
    out[key] = converted


def _plan(cls: type) -> _Plan:
    """How a dataclass's JSON is made, read once per class from its fields' metadata (the
    ``--queries`` path serialises thousands of plans: no metadata lookups per object). A
    class naming ``json_keys`` has those attributes (fields or properties), in that order."""
    found = _PLANS.get(cls)
    if found is None:
        by_name = {f.name: f for f in dataclasses.fields(cls)}
        names = getattr(cls, "json_keys", None)
        fields = []
        for name in by_name if names is None else names:
            meta = by_name[name].metadata if name in by_name else {}
            if meta.get(JSON_SKIP):
                continue
            flags = (
                (_OMIT if meta.get(JSON_OMIT_EMPTY) else 0)
                | (_NULL if meta.get(JSON_NULL_IF_EMPTY) else 0)
                | (_INLINE if meta.get(JSON_INLINE) else 0)
            )
            inner = meta.get(JSON_INNER)
            renames = inner if isinstance(inner, Mapping) else None
            fields.append((name, str(meta.get(JSON_KEY, name)), flags, renames))
        found = (tuple(fields), tuple(getattr(cls, "json_properties", ())))
        _PLANS[cls] = found
    return found


def json_layout(
    cls: type,
) -> tuple[tuple[tuple[str, str, bool, Mapping[str, str] | None], ...], tuple[str, ...]] | None:
    """How the JSON of a ``cls`` instance is made: (attribute, key, inlined, JSON_INNER renames)
    of each field it holds, then the properties it names; None where the class writes its own
    (``to_dict``)."""
    if not _generic(cls):
        return None
    fields, properties = _plan(cls)
    return tuple((n, k, bool(f & _INLINE), r) for n, k, f, r in fields), properties


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
            if convert is _dataclass:  # the same object, by code written for the class
                convert = _warming(cls)
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


# Conversions of a class by the walk before its code is written (``_warming``): writing it
# costs what ~50 walks do, more than one plan's JSON (``rigwise infer`` alone) needs.
COMPILE_AFTER = 16


def _warming(cls: type) -> Callable[[Any], dict[str, Any]]:
    """``_dataclass``, until ``cls`` has been converted ``COMPILE_AFTER`` times: then its
    compiled converter takes its place in ``_CONVERTERS``."""
    left = COMPILE_AFTER

    def convert(value: Any) -> dict[str, Any]:
        nonlocal left
        left -= 1
        if left <= 0:
            _CONVERTERS[cls] = _compiled(cls)
        return _dataclass(value)

    return convert


def _compiled(cls: type) -> Callable[[Any], dict[str, Any]]:
    """``_dataclass`` for ``cls`` written out as one function (``serialize_compiled``, imported
    here: one plan's JSON never needs it)."""
    from rigwise.serialize_compiled import compile_converter

    fields, properties = _plan(cls)
    helpers: dict[str, Callable[..., Any]] = {"to_jsonable": to_jsonable, "_shaped": _shaped}
    helpers.update(_items=_items, _mapping=_mapping)
    return compile_converter(cls, fields, properties, helpers, _FINISH)


def _generic(cls: type) -> bool:
    """Whether ``_dataclass`` makes the JSON of a ``cls`` instance."""
    found = _GENERIC.get(cls)
    if found is None:
        found = hasattr(cls, "__dataclass_fields__") and _converter(cls) is _dataclass
        _GENERIC[cls] = found
    return found


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
