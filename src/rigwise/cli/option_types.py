"""Click parameter types: paths the CLI writes to, text that may not be blank, and numbers
written plainly."""

from __future__ import annotations

import copy
import math
import os
from typing import Any

import click


class WritableFolder(click.ParamType):
    """A folder rigwise writes into (--plot-dir): made if missing, and a file can be created in
    it, checked before the command's work (a plot into /proc was an internal error after it)."""

    name = "directory"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        import tempfile

        try:
            os.makedirs(value, exist_ok=True)
            with tempfile.TemporaryFile(dir=value):
                pass
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            self.fail(f"cannot write into {str(value)[:240]!r} ({reason}); give a writable folder.")
        return value


# Where a value came from that the user typed: an empty one is a mistake there, while a default
# of '' (grid join --storage, bench --only) is the command's own "none".
_TYPED = (click.core.ParameterSource.COMMANDLINE, click.core.ParameterSource.ENVIRONMENT)


class NotBlank(click.ParamType):
    """A text or path option (or argument) that refuses an empty or whitespace-only value the
    user typed: ``--quant ''`` planned the default quant, ``--db ''`` an unnamed database, with
    no word. Mixed into the option's own type (``harden_text``), so its conversion, help and
    completion stay as they were."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip() and _typed(param, ctx):
            self.fail(blank_message(value, param), param, ctx)
        return super().convert(value, param, ctx)


def _typed(param: click.Parameter | None, ctx: click.Context | None) -> bool:
    if param is None or ctx is None or param.name is None:
        return True
    return ctx.get_parameter_source(param.name) in _TYPED


def blank_message(value: str, param: click.Parameter | None) -> str:
    """``'' is empty: give a value (Weights: Q4_K_M, ...), or leave --quant out.``: the
    option's own help says what to give."""
    if not isinstance(param, click.Option):
        name = param.human_readable_name.strip("[]") if param is not None else "a value"
        return f"{value!r} is empty: give {name}."
    what = _short(" ".join((param.help or "").split()))
    give = f"give a value ({what})" if what else "give a value"
    leave = "" if param.required else f", or leave {param.opts[0]} out"
    return f"{value!r} is empty: {give}{leave}."


def _short(text: str, limit: int = 120) -> str:
    """The help, cut at a word and marked when longer than ``limit``; its closing full stop
    dropped (an ellipsis kept)."""
    if len(text) > limit:
        text = text[: limit - 3].rsplit(" ", 1)[0].rstrip(",;:") + "..."
    if text.endswith(".") and not text.endswith("..."):
        text = text[:-1]
    return text


_NOT_FINITE = ("inf", "infinity", "nan")  # read, then refused as not finite (the clearer message)


def refuse_unplain(kind: click.ParamType, text: str, integer: bool) -> None:
    """Fail unless ``text`` is a number written plainly: ``int()`` and ``float()`` also read
    ``1_000`` and other scripts' digits (``--nodes 1_0`` planned 10 nodes)."""
    from rigwise.option_fields import PLAIN_NUMBER_HINT, written_plainly

    if written_plainly(text) or text.strip().lower().lstrip("+-") in _NOT_FINITE:
        return
    what = "an integer: write digits, e.g. 1000" if integer else f"a number: {PLAIN_NUMBER_HINT}"
    kind.fail(f"{text.strip()[:60]!r} is not {what}.")


class PlainNumber(click.ParamType):
    """A click number type (``IntRange``, ``FloatRange``) that first refuses text not written
    plainly; mixed into the option's own type (``harden_number``)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str):
            integer = isinstance(self, click.types.IntParamType)
            _refuse_text(self, value, param, integer)
            if value.strip().lower().lstrip("+-") in _NOT_FINITE:
                self.fail(f"{value.strip()!r} is not a finite number.")
            if integer and not value.strip().lstrip("+-").isdigit():
                self.fail(f"{value.strip()[:60]!r} is not an integer: write digits, e.g. 1000.")
        return super().convert(value, param, ctx)


def _refuse_text(
    kind: click.ParamType, text: str, param: click.Parameter | None, integer: bool
) -> None:
    """A number option's text: not blank (the blank-value message), written plainly."""
    if not text.strip():
        kind.fail(blank_message(text, param))
    refuse_unplain(kind, text, integer)


_HARDENED: dict[tuple[type, type], type[click.ParamType]] = {}


def _mix_in(param: click.Parameter, check: type[click.ParamType]) -> None:
    """Give ``param`` the ``check`` before its own type's conversion, keeping that type (a
    subclass made once per pair, the instance's settings copied)."""
    kind = type(param.type)
    hardened = _HARDENED.get((check, kind))
    if hardened is None:
        name = f"{check.__name__}{kind.__name__}"
        hardened = _HARDENED[check, kind] = type(name, (check, kind), {})
    checked = copy.copy(param.type)
    checked.__class__ = hardened
    param.type = checked


def harden_text(param: click.Parameter) -> None:
    """Give a text or path parameter the ``NotBlank`` check."""
    kind = type(param.type)
    text = (click.types.StringParamType, click.Path, WritableFolder)  # --plot-dir ' ' made ' '/
    if issubclass(kind, text) and not issubclass(kind, NotBlank):
        _mix_in(param, NotBlank)


def harden_number(param: click.Parameter) -> None:
    """Give a click number type the ``PlainNumber`` check (plain int and float options get
    ``FiniteNumber``, which makes the same check)."""
    kind = type(param.type)
    number = (click.types.IntParamType, click.types.FloatParamType)
    if issubclass(kind, number) and not issubclass(kind, PlainNumber):
        _mix_in(param, PlainNumber)


MAX_OPTION_INT = 2**53  # the largest integer a float (and JSON) holds exactly


class FiniteNumber(click.ParamType):
    """A number option: finite and >= 0 (no nan, inf, 1e400 or negatives); the planners check
    the tighter bounds (e.g. > 0) and name the option when a value is out of them."""

    def __init__(self, integer: bool) -> None:
        self.integer = integer
        self.name = "integer" if integer else "number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, int | float) and not isinstance(value, bool):
            number: float = value
        else:
            _refuse_text(self, str(value), param, self.integer)
            text = str(value).strip()
            try:
                number = int(text) if self.integer else float(text)
            except (ValueError, OverflowError):
                what = "an integer: write digits, e.g. 1000" if self.integer else "a number"
                self.fail(f"{text[:60]!r} is not {what}.")
        if isinstance(number, float) and not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.")
        if number < 0 or number > MAX_OPTION_INT:
            self.fail(f"{number!r} is out of range (0 to {MAX_OPTION_INT:,}).")
        return number
