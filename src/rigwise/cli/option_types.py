"""Click parameter types: paths the CLI writes to, and text that may not be blank."""

from __future__ import annotations

import copy
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
    what = " ".join((param.help or "").split())
    what = what if len(what) <= 120 else what[:117] + "..."
    give = f"give a value ({what.rstrip('.')})" if what else "give a value"
    leave = "" if param.required else f", or leave {param.opts[0]} out"
    return f"{value!r} is empty: {give}{leave}."


_NOT_BLANK: dict[type, type[click.ParamType]] = {}


def harden_text(param: click.Parameter) -> None:
    """Give a text or path parameter the ``NotBlank`` check, keeping its own type (a subclass
    made once per type, the instance's settings copied)."""
    kind = type(param.type)
    text = (click.types.StringParamType, click.Path, WritableFolder)  # --plot-dir ' ' made ' '/
    if not issubclass(kind, text) or issubclass(kind, NotBlank):
        return
    hardened = _NOT_BLANK.get(kind)
    if hardened is None:
        hardened = _NOT_BLANK[kind] = type(f"NotBlank{kind.__name__}", (NotBlank, kind), {})
    checked = copy.copy(param.type)
    checked.__class__ = hardened
    param.type = checked
