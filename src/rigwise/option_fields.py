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
import math
import re
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
        members = tuple(_accepts(a) for a in args if a is not type(None))
        if len(members) == 1 and len(args) == 2:  # an optional value: the common case, fast
            inner = members[0]
            return lambda value: value is None or inner(value)
        optional = len(members) < len(args)
        return lambda value: (optional and value is None) or any(a(value) for a in members)
    return lambda value: False  # a type this check does not know: pydantic's


def _not_blank(accepts: Accepts) -> Accepts:
    """``accepts``, leaving an empty text to pydantic (``no_blank`` says why)."""
    return lambda value: accepts(value) and not (type(value) is str and not value.strip())


def _within(bounds: Mapping[str, float]) -> Accepts:
    ge, le, gt = bounds.get("ge"), bounds.get("le"), bounds.get("gt")
    return lambda value: (
        (ge is None or value >= ge) and (le is None or value <= le) and (gt is None or value > gt)
    )  # NaN fails every comparison: pydantic's message says why


# accepts, within bounds, before hook, after hook
_Check = tuple[Accepts, Accepts, Hook | None, Hook | None]


class _Spec:
    """What checking one options dataclass needs, worked out once per class."""

    def __init__(self, cls: type[Any]) -> None:
        hints = typing.get_type_hints(cls)
        fields = dataclasses.fields(cls)
        self.checks: dict[str, _Check] = {
            f.name: (
                _not_blank(_accepts(hints[f.name]))
                if takes_text(hints[f.name])
                else _accepts(hints[f.name]),
                _within(f.metadata.get("bounds", {})),
                f.metadata.get("before"),
                f.metadata.get("after"),
            )
            for f in fields
        }
        self.defaults = {f.name: f.default for f in fields if f.default is not dataclasses.MISSING}
        self.names = frozenset(self.checks)
        self.required = self.names - self.defaults.keys()


_SPECS: dict[type, _Spec] = {}
_MODELS: dict[type, Any] = {}


def _spec(cls: type[Any]) -> _Spec:
    found = _SPECS.get(cls)
    if found is None:
        found = _SPECS[cls] = _Spec(cls)
    return found


def _fast(value: object, check: _Check) -> object:
    accepts, within, before, after = check
    try:
        if before is not None:
            value = before(value)
        if not accepts(value) or (type(value) in (int, float) and not within(value)):
            return _SLOW
        return value if after is None else after(value)
    except Exception:  # what pydantic makes of it (a message, or the error raised as it is)
        return _SLOW


def _checked(spec: _Spec, given: Mapping[str, object]) -> dict[str, object] | None:
    """The given values checked (and converted), or None when one needs pydantic. Which one
    fails first does not matter: pydantic then validates them all, in field order."""
    checked = {}
    for name, value in given.items():
        if value is not spec.defaults.get(name, _SLOW):  # a default is valid as it is
            value = _fast(value, spec.checks[name])
            if value is _SLOW:
                return None
        checked[name] = value
    return checked


def check(options: Any) -> None:
    """Validate a just-made options dataclass (its ``__post_init__``), converting in place;
    where a value is not exactly right, pydantic validates them all (and raises its
    ``ValidationError`` naming each bad field, as an options pydantic model did)."""
    spec = _spec(type(options))
    values = vars(options)
    checked = _checked(spec, values)
    if checked is None:
        checked = _by_pydantic(type(options), dict(values))
    for name, value in checked.items():
        if value is not values[name]:
            object.__setattr__(options, name, value)


def _by_pydantic(cls: type[Any], data: object) -> dict[str, object]:
    model = pydantic_model(cls).model_validate(data)
    return {name: getattr(model, name) for name in _spec(cls).names}


def parse(cls: type[Any], data: object) -> Any:
    """Options from a mapping of field names (``model_validate`` of a pydantic model): unknown
    or missing keys and bad values raise pydantic's ``ValidationError``. Checked values make
    the options without a second check in ``__post_init__`` (as ``model_construct`` would)."""
    spec = _spec(cls)
    checked = None
    if isinstance(data, Mapping) and spec.required <= data.keys() <= spec.names:
        checked = _checked(spec, data)
    if checked is None:
        return cls(**_by_pydantic(cls, data))
    options = object.__new__(cls)
    vars(options).update(spec.defaults, **checked)
    return options


def option_names(cls: type[Any]) -> frozenset[str]:
    """The field names of an options dataclass (what ``parse`` accepts as keys)."""
    return _spec(cls).names


def given_fields(options: Any) -> dict[str, object]:
    """The fields of an options dataclass that differ from their defaults (what was given)."""
    defaults = _spec(type(options)).defaults
    return {
        name: value
        for name, value in vars(options).items()
        if name not in defaults or value != defaults[name]
    }


def _validator(hook: Hook) -> Callable[[Any, Any], Any]:
    def validate(cls: Any, value: Any) -> Any:
        return hook(value)

    return validate


def number_not_flag(hint: Any) -> bool:
    """Whether ``hint`` takes a number but no bool (pydantic reads true as 1 for an int), or
    a mapping or list of such numbers (``disagg``: {"prefill": {"tp": 8}}, slots: [1, 5])."""
    if get_origin(hint) is typing.Annotated:
        hint = get_args(hint)[0]
    args = get_args(hint) if get_origin(hint) in (typing.Union, type(int | None)) else (hint,)
    args = tuple(get_args(a)[0] if get_origin(a) is typing.Annotated else a for a in args)
    for arg in args:
        origin, inner = get_origin(arg), get_args(arg)
        if origin is dict and number_not_flag(inner[-1]):
            return True
        if origin in (list, tuple) and any(number_not_flag(i) for i in inner if i is not ...):
            return True
    return bool({int, float} & set(args)) and bool not in args


def _flag(value: Any, where: str = "") -> str | None:
    """Where the first bool in ``value`` (or in the values of a mapping in it) is, and what it
    is ('true', 'prefill.tp = true'); None when there is none."""
    if isinstance(value, bool):
        return f"{where} = {str(value).lower()}" if where else str(value).lower()
    if isinstance(value, Mapping):
        found = (_flag(v, f"{where}.{k}" if where else str(k)) for k, v in value.items())
        return next((f for f in found if f is not None), None)
    if isinstance(value, list | tuple):
        items = (_flag(v, f"{where}.{i}" if where else str(i)) for i, v in enumerate(value))
        return next((f for f in items if f is not None), None)
    return None


_PLAIN_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
PLAIN_NUMBER_HINT = "write digits with an optional '.' and exponent, e.g. 1000, 2.5 or 1e3"


def written_plainly(text: str) -> bool:
    """Digits with an optional sign, '.' and exponent (surrounding spaces aside): not Python's
    ``1_000``, other scripts' digits, ``inf`` or ``nan``, which ``float()`` also reads."""
    return _PLAIN_NUMBER.fullmatch(text.strip()) is not None


def _refuse_unplain(text: str) -> None:
    """A number's text that Python reads but a person would not write: '1_0' ({"nodes": "1_0"}
    planned 10 nodes, as ``--nodes 1_0`` did), other scripts' digits, 'nan', 'inf'. Text that is
    no number at all ('8k', 'max') is the field's hook's or pydantic's to judge."""
    try:
        number = float(text)
    except ValueError:
        return
    if not math.isfinite(number):
        raise ValueError(f"{text.strip()[:40]!r} is not a finite number; give a finite number")
    if not written_plainly(text):
        raise ValueError(f"{text.strip()[:40]!r} is not a plain number; {PLAIN_NUMBER_HINT}")


def no_flag(hook: Hook | None) -> Hook:
    """``hook`` (if any), after refusing a bool ({"context": true} was a context of 1 token) and
    a number's text not written plainly."""

    def refuse_bools(value: Any) -> Any:
        flag = _flag(value)
        if flag is not None:
            raise ValueError(f"{flag} is not a number; give a number")
        if isinstance(value, str):
            _refuse_unplain(value)
        return value if hook is None else hook(value)

    return refuse_bools


def takes_text(hint: Any) -> bool:
    """Whether ``hint`` takes free text (a ``str``, maybe optional): an empty one is no value."""
    args = get_args(hint) if get_origin(hint) in (typing.Union, type(int | None)) else (hint,)
    return str in args


def no_blank(hook: Hook | None) -> Hook:
    """``hook`` (if any), after refusing an empty or whitespace-only text: {"quant": ""} was
    planned as the default quant, as ``--quant ''`` was (cli/option_types.NotBlank)."""

    def refuse_blank(value: Any) -> Any:
        if isinstance(value, str) and not value.strip():
            raise ValueError(f"{value!r} is empty; give a value, or leave the key out")
        return value if hook is None else hook(value)

    return refuse_blank


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
            if mode == "before" and number_not_flag(hints[f.name]):
                hook = no_flag(hook)
            if mode == "before" and takes_text(hints[f.name]):
                hook = no_blank(hook)
            if hook is not None:
                check_field = field_validator(f.name, mode=mode)(_validator(hook))
                validators[f"_{f.name}_{mode}"] = check_field
    config = ConfigDict(extra="forbid", frozen=True)
    return create_model(cls.__name__, __config__=config, __validators__=validators, **fields)


__all__ = [
    "PLAIN_NUMBER_HINT",
    "check",
    "given_fields",
    "no_blank",
    "no_flag",
    "number_not_flag",
    "option",
    "parse",
    "pydantic_model",
    "takes_text",
    "written_plainly",
]
