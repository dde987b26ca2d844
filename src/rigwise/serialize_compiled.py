"""One function per dataclass that makes its JSON object, written once per class.

``rigwise.serialize`` makes a dataclass's JSON by walking a list of its fields (``_dataclass``):
for every object, a loop over (attribute, key, flags) tuples, a ``getattr`` and a type check of
each value. ``--queries`` serialises thousands of plans of a few classes, and that walk was a
quarter of its time. Here the same walk is written out once per class as Python source (as
``dataclasses`` writes ``__init__``): one statement per key, in the same order, each value
``to_jsonable(value)`` with the check that skips the call where the field's annotation names a
type whose JSON is the value itself (a finite float, a string, an int, a bool). Fields with
JSON metadata go through ``serialize``'s own ``_shaped``, the class's finish runs last: the
object made is the one ``_dataclass`` makes (``tests/test_serialize_compiled.py`` compares
them for every plan class).

Nothing of rigwise is imported here: ``serialize`` hands in the functions the code calls.
"""

from __future__ import annotations

import keyword
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

# (attribute, JSON key, flags, JSON_INNER renames or None) of a field: serialize's _Field
Field = tuple[str, str, int, "Mapping[str, str] | None"]

# How a value of the annotated type becomes its JSON without a call, else to_jsonable(x).
# Each is exactly to_jsonable's answer for such a value (see to_jsonable's first lines).
_FAST = {
    "float": "(x if _finite(x) else None) if type(x) is float else _tj(x)",
    "str": "x if type(x) is str else _tj(x)",
    "int": "x if type(x) is int else _tj(x)",
    "bool": "x if type(x) is bool else _tj(x)",
}
_TUPLE = "_items(x) if type(x) is tuple else _tj(x)"
_DICT = "_mapping(x) if type(x) is dict else _tj(x)"


def _value(annotation: object) -> str:
    """The expression of the JSON of ``x``, a value annotated ``annotation`` (a string: the
    modules use ``from __future__ import annotations``; anything else: no shortcut)."""
    text = annotation if isinstance(annotation, str) else ""
    if text in _FAST:
        return _FAST[text]
    if text.startswith("tuple["):
        return _TUPLE
    if text.startswith(("dict[", "Mapping[")):
        return _DICT
    return "_tj(x)"


def _read(name: str) -> str:
    """Python that reads attribute ``name`` of ``v``."""
    if name.isidentifier() and not keyword.iskeyword(name):
        return f"v.{name}"
    return f"getattr(v, {name!r})"


def _property_annotation(cls: type, name: str) -> object:
    """The return annotation of the property (or cached property) ``name`` of ``cls``."""
    found = getattr(cls, name, None)
    getter = getattr(found, "fget", None) or getattr(found, "func", None)
    return getattr(getter, "__annotations__", {}).get("return") if getter else None


def compile_converter(
    cls: type,
    fields: Sequence[Field],
    properties: Sequence[str],
    helpers: Mapping[str, Callable[..., Any]],
    finishes: Mapping[type, Callable[[dict[str, Any]], dict[str, Any]]],
) -> Callable[[Any], dict[str, Any]]:
    """The function that makes the JSON object of a ``cls`` instance: ``fields`` then
    ``properties`` (serialize's ``_plan`` of the class), then ``finishes[cls]`` if registered
    (looked up at each call: a finish may be registered after the first conversion).
    ``helpers``: ``to_jsonable``, ``_shaped``, ``_items`` and ``_mapping`` of serialize."""
    annotations = {f.name: f.type for f in getattr(cls, "__dataclass_fields__", {}).values()}
    namespace: dict[str, Any] = {
        "_tj": helpers["to_jsonable"],
        "_shaped": helpers["_shaped"],
        "_items": helpers["_items"],
        "_mapping": helpers["_mapping"],
        "_finite": math.isfinite,
        "_finishes": finishes,
        "_cls": cls,
    }
    body = ["out = {}"]
    for number, field in enumerate(fields):
        name, key, flags, inner = field
        body.append(f"x = {_read(name)}")
        if flags or inner is not None:  # JSON metadata: serialize's own code shapes it
            namespace[f"_field{number}"] = field
            body.append(f"_shaped(out, x, _field{number})")
        else:
            hint = annotations.get(name) or _property_annotation(cls, name)  # json_keys
            body.append(f"out[{key!r}] = {_value(hint)}")
    for name in properties:
        body.append(f"x = {_read(name)}")
        body.append(f"out[{name!r}] = {_value(_property_annotation(cls, name))}")
    body += ["finish = _finishes.get(_cls)", "return out if finish is None else finish(out)"]
    source = "def convert(v):\n" + "".join(f"    {line}\n" for line in body)
    exec(compile(source, f"<json of {cls.__qualname__}>", "exec"), namespace)
    convert: Callable[[Any], dict[str, Any]] = namespace["convert"]
    return convert
