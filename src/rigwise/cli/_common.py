"""Shared pieces of the CLI: JSON output, error mapping, console."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

import click

from rigwise.serialize import to_jsonable

if TYPE_CHECKING:
    from rigwise.json_fields import Selection

EXIT_OK = 0
EXIT_INFEASIBLE = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 70  # EX_SOFTWARE (sysexits.h): a bug in rigwise, not the user's input
EXIT_INTERRUPTED = 130

DEBUG_HINT = "run with --debug for the traceback"


def print_json(value: Any) -> None:
    click.echo(json.dumps(to_jsonable(value), indent=2, sort_keys=False))


def fail(message: str, code: int = EXIT_BAD_INPUT, *, hint: str | None = None) -> NoReturn:
    """Stop a command with a bad-input error (exit 2): raised, so ``run_guarded`` prints it
    the same way as every other error (JSON on stdout with --json)."""
    from rigwise.errors import InputError

    if code != EXIT_BAD_INPUT:
        click.echo(f"error: {message}", err=True)
        raise SystemExit(code)
    raise InputError(message, hint=hint)


def report_error(message: str, hint: str | None, *, as_json: bool) -> None:
    """One error, one way: ``{"error", "hint"}`` on stdout with --json, else ``error: ...``
    (and the hint) on stderr."""
    if as_json:
        click.echo(json.dumps({"error": message, "hint": hint}))
        return
    click.echo(f"error: {message}" + (f" {hint}" if hint else ""), err=True)


def run_guarded(call: Callable[[], Any], argv: Sequence[str] | None = None) -> int:
    """Run the click app; map every outcome to an exit code: 0 ok, 1 infeasible (the command
    returns it), 2 bad input or environment, 70 an internal error (one line; the traceback
    with --debug), 130 interrupted. ``argv`` tells whether --json/--debug were given."""
    from rigwise.errors import RigwiseError

    args = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in args
    debug = "--debug" in args or bool(os.environ.get("RIGWISE_DEBUG"))
    try:
        result = call()
    except click.exceptions.Abort:
        report_error("aborted", None, as_json=as_json)
        return EXIT_BAD_INPUT
    except click.ClickException as exc:
        if as_json:
            report_error(exc.format_message(), _usage_hint(exc), as_json=True)
        else:
            exc.show()
        return EXIT_BAD_INPUT
    except RigwiseError as exc:
        if debug:
            import traceback  # errors only: it and textwrap cost every command's start-up

            traceback.print_exc()
        report_error(exc.message, exc.hint, as_json=as_json)
        return EXIT_INTERNAL if _is_internal(exc) else EXIT_BAD_INPUT
    except SystemExit as exc:
        return _exit_code(exc.code)
    except KeyboardInterrupt:
        report_error("interrupted", None, as_json=as_json)
        return EXIT_INTERRUPTED
    except (MemoryError, RecursionError) as exc:
        return _internal(exc, debug, as_json, "the input is too large or too deeply nested")
    except Exception as exc:  # the last line of defence: a bug, reported in one line
        return _internal(exc, debug, as_json, DEBUG_HINT)
    return int(result) if isinstance(result, int) else EXIT_OK


def _internal(exc: BaseException, debug: bool, as_json: bool, hint: str) -> int:
    import traceback

    if debug:
        traceback.print_exception(exc)
    where = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    site = f" at {os.path.basename(where[0].filename)}:{where[0].lineno}" if where else ""
    text = " ".join(str(exc).split())[:200]
    message = f"internal error{site}: {type(exc).__name__}: {text}"
    report_error(message, f"({hint})" if hint == DEBUG_HINT else f"({hint}; {DEBUG_HINT})",
                 as_json=as_json)  # fmt: skip
    return EXIT_INTERNAL


def _is_internal(exc: BaseException) -> bool:
    from rigwise.errors import InternalError

    return isinstance(exc, InternalError)


def _usage_hint(exc: click.ClickException) -> str | None:
    ctx = getattr(exc, "ctx", None)
    return f"See `{ctx.command_path} --help`." if ctx is not None else None


def _exit_code(code: object) -> int:
    if code is None:
        return EXIT_OK
    if isinstance(code, int):
        return code
    click.echo(str(code), err=True)
    return EXIT_BAD_INPUT


def finish(
    plan: Any, as_json: bool, render: Callable[[Any], None], fields: Selection | None = None
) -> int:
    """The one way a planning command ends: the plan (or its ``fields``) as JSON, or rendered;
    then exit 0 when it fits and 1 (infeasible; the reason is in the plan) when it does not."""
    if as_json or fields is not None:
        print_json(plan if fields is None else fields.of(plan))
    else:
        render(plan)
    return EXIT_OK if plan.fits else EXIT_INFEASIBLE


def typed_params(skip: Sequence[str], *, arguments: bool = True) -> list[str]:
    """The parameters of the running command the user gave (on the command line or from the
    environment), by their first option name or, for an argument, its name (MODEL); those
    named in ``skip`` aside, and the arguments too unless ``arguments``."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return []
    typed = (click.core.ParameterSource.COMMANDLINE, click.core.ParameterSource.ENVIRONMENT)
    return [
        param.opts[0] if isinstance(param, click.Option) else param.human_readable_name
        for param in ctx.command.params
        if (arguments or isinstance(param, click.Option))
        and param.name not in skip
        and ctx.get_parameter_source(param.name or "") in typed
    ]


PORT = click.IntRange(0, 65535)  # a TCP port option (0 = any free one); bind() overflows past it


def harden_params(command: click.Command) -> click.Command:
    """Give every plain int/float option of ``command`` (and of its subcommands) the checked
    number type, every ranged one the plain-writing check (``option_types.PlainNumber``), and
    every text or path parameter the refusal of an empty value typed (``option_types.NotBlank``),
    once, where commands are registered: no command can forget them."""
    from rigwise.cli.option_types import FiniteNumber, harden_number, harden_text

    for param in command.params:
        harden_text(param)
        kind = type(param.type)
        if kind is click.types.FloatParamType:
            param.type = FiniteNumber(integer=False)
        elif kind is click.types.IntParamType:
            param.type = FiniteNumber(integer=True)
        else:
            harden_number(param)  # IntRange, FloatRange: their own bounds, written plainly
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            harden_params(sub)
    return command


def ranged_rate(value: float, bounds: list[float] | None, unit: str = "tok/s") -> str:
    """``16.4 tok/s (14.9-17.6)``: a rate and, when there is one, its P10-P90 range (and which
    side similar rigs measured, when the whole range is on one side)."""
    from rigwise.estimate.plan_intervals import interval_text

    return f"{value:,.1f} {unit}" + interval_text(bounds, value=value)


def ranged_seconds(value: float, bounds: list[float] | None) -> str:
    """``92.4 ms (70.3 ms-100 ms)``: a time and, when there is one, its P10-P90 range."""
    from rigwise.estimate.plan_intervals import interval_text
    from rigwise.units import format_seconds

    return format_seconds(value) + interval_text(bounds, format_seconds, value, time=True)


def console() -> Any:
    """A rich console on stdout (imported lazily; rich is a dependency)."""
    from rich.console import Console

    return Console(highlight=False, soft_wrap=False, width=None if sys.stdout.isatty() else 160)


rig_option = click.option(
    "--rig",
    type=click.Path(dir_okay=False),
    help="Plan on the GPUs and links of a rig file (see `rigwise rig check`), instead of --on.",
)


def apply_rig(options: dict[str, Any]) -> dict[str, Any]:
    """Replace ``rig`` (a rig file path) by the ``on`` text the planners take."""
    rig = options.pop("rig", None)
    if rig:
        if options.get("on") or options.get("cluster"):
            fail("Give either --rig or --on/--cluster, not both.")
        from rigwise.design.cluster import rig_on_text

        options["on"] = rig_on_text(rig)
    return options
