"""Options as frozen dataclasses whose fields declare their checks, validated without pydantic
on the common path and by pydantic on every other.

An options class (``InferOptions``) declares each field with ``option()``: its default, its
bounds (pydantic's ``ge``/``le``/``gt``) and hooks that run before the type check (to convert,
e.g. '8k' -> 8000) and after it (to normalise). ``check`` accepts, in microseconds, values that
have exactly the field's type and lie within its bounds, which is what the CLI and most
callers give; anything else goes to a pydantic model built from the same declarations
(``pydantic_model``), so conversions ("4" -> 4, 300 -> 300.0) and every error message are
pydantic's, as they were when the options class was a pydantic model. Importing pydantic and
building a model cost `rigwise infer` about a tenth of a second of start-up; a command whose
options are already well typed never pays it.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal, get_args, get_origin

Hook = Callable[[Any], Any]
Accepts = Callable[[Any], bool]

_SLOW = object()  # a value the fast check leaves to pydantic


def option(
    default: Any = dataclasses.MISSING,
    *,
    ge: float | None = None,
    le: float | None = None,
    gt: float | None = None,
    before: Hook | None = None,
    after: Hook | None = None,
) -> Any:
    """A field of an options dataclass: its default (none: required), its bounds and the hooks
    run before the type check (``before``: converts) and after it (``after``: normalises). A
    hook raises ValueError for a bad value (pydantic's "Value error, ..." message) or an
    ``InputError`` (raised as it is)."""
    bounds = {
        key: value for key, value in (("ge", ge), ("le", le), ("gt", gt)) if value is not None
    }
    metadata = {"bounds": bounds, "before": before, "after": after}
    return dataclasses.field(default=default, metadata=metadata)


def _accepts(hint: Any) -> Accepts:
    """Whether a value already has the type ``hint`` names, exactly (no conversion needed)."""
    if hint is type(None):
        return lambda value: value is None
    if hint in (str, int, float, bool):
        return lambda value: type(value) is hint
    args, origin = get_args(hint), get_origin(hint)
    if origin is Literal:
        return lambda value: any(type(value) is type(a) and value == a for a in args)
    if origin is dict and len(args) == 2:
        key, item = _accepts(args[0]), _accepts(args[1])
        return lambda value: (
            type(value) is dict and all(key(k) and item(v) for k, v in value.items())
        )
    if args and origin in (typing.Union, type(int | None)):
        members = tuple(_accepts(a) for a in args)
        return lambda value: any(accepts(value) for accepts in members)
    return lambda value: False  # a type this check does not know: pydantic's


def _within(bounds: Mapping[str, float]) -> Accepts:
    ge, le, gt = bounds.get("ge"), bounds.get("le"), bounds.get("gt")
    return lambda value: (
        (ge is None or value >= ge) and (le is None or value <= le) and (gt is None or value > gt)
    )  # NaN fails every comparison: pydantic's message says why


# name, default, accepts, within bounds, before hook, after hook
_Field = tuple[str, object, Accepts, Accepts, Hook | None, Hook | None]


_FIELDS: dict[type, tuple[_Field, ...]] = {}
_MODELS: dict[type, Any] = {}


def _fields(cls: type[Any]) -> tuple[_Field, ...]:
    found = _FIELDS.get(cls)
    if found is None:
        found = _FIELDS[cls] = _checked_fields(cls)
    return found


def _checked_fields(cls: type[Any]) -> tuple[_Field, ...]:
    hints = typing.get_type_hints(cls)
    return tuple(
        (
            f.name,
            f.default,
            _accepts(hints[f.name]),
            _within(f.metadata.get("bounds", {})),
            f.metadata.get("before"),
            f.metadata.get("after"),
        )
        for f in dataclasses.fields(cls)
    )


def _fast(value: object, accepts: Accepts, within: Accepts, before: Hook | None,
          after: Hook | None) -> object:  # fmt: skip
    try:
        if before is not None:
            value = before(value)
        if not accepts(value) or (type(value) in (int, float) and not within(value)):
            return _SLOW
        return value if after is None else after(value)
    except Exception:  # what pydantic makes of it (a message, or the error raised as it is)
        return _SLOW


def check(options: Any) -> None:
    """Validate a just-made options dataclass (its ``__post_init__``), converting in place:
    the fields that differ from their defaults (which are valid) are checked here; at the
    first value that is not exactly right, pydantic validates them all (and raises its
    ``ValidationError`` naming each bad field, as an options pydantic model did)."""
    changed: dict[str, object] = {}
    for name, default, accepts, within, before, after in _fields(type(options)):
        value = getattr(options, name)
        if value is default:
            continue
        new = _fast(value, accepts, within, before, after)
        if new is _SLOW:
            changed = _by_pydantic(options)
            break
        if new is not value:
            changed[name] = new
    for name, value in changed.items():
        object.__setattr__(options, name, value)


def _by_pydantic(options: Any) -> dict[str, object]:
    values = {f.name: getattr(options, f.name) for f in dataclasses.fields(options)}
    model = pydantic_model(type(options)).model_validate(values)
    return {name: getattr(model, name) for name in values}


def parse(cls: type[Any], data: object) -> Any:
    """Options from a mapping of field names (``model_validate`` of a pydantic model): unknown
    or missing keys and bad values raise pydantic's ``ValidationError``."""
    names = {f.name for f in dataclasses.fields(cls)}
    required = {
        f.name
        for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    if isinstance(data, Mapping) and required <= data.keys() <= names:
        return cls(**data)
    model = pydantic_model(cls).model_validate(data)
    return cls(**{name: getattr(model, name) for name in names})


def given_fields(options: Any) -> dict[str, object]:
    """The fields of an options dataclass that differ from their defaults (what was given)."""
    return {
        f.name: getattr(options, f.name)
        for f in dataclasses.fields(options)
        if getattr(options, f.name) != f.default
    }


def _validator(hook: Hook) -> Callable[[Any, Any], Any]:
    def validate(cls: Any, value: Any) -> Any:
        return hook(value)

    return validate


def pydantic_model(cls: type[Any]) -> Any:
    """The pydantic model of an options dataclass: the same fields, bounds and hooks (as field
    validators), unknown keys forbidden; its ``model_fields`` describe the options to the web
    API. Made on first use."""
    found = _MODELS.get(cls)
    if found is None:
        found = _MODELS[cls] = _pydantic_model(cls)
    return found


def _pydantic_model(cls: type[Any]) -> Any:
    from pydantic import ConfigDict, Field, create_model, field_validator

    hints = typing.get_type_hints(cls)
    fields: dict[str, Any] = {}
    validators: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        default = ... if f.default is dataclasses.MISSING else f.default
        fields[f.name] = (hints[f.name], Field(default, **f.metadata.get("bounds", {})))
        for mode in ("before", "after"):
            hook = f.metadata.get(mode)
            if hook is not None:
                check_field = field_validator(f.name, mode=mode)(_validator(hook))
                validators[f"_{f.name}_{mode}"] = check_field
    config = ConfigDict(extra="forbid", frozen=True)
    return create_model(cls.__name__, __config__=config, __validators__=validators, **fields)


__all__ = ["check", "given_fields", "option", "parse", "pydantic_model"]
