"""Shared pieces of the CLI: JSON output, error mapping, console."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

import click

from rigwise.serialize import to_jsonable

if TYPE_CHECKING:
    from rigwise.json_fields import Selection
    from rigwise.validate_input import Line

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


MAX_QUERY_LINE_CHARS = 65_536  # bytes of one JSON line of --queries
QUERY_CHUNK = 512  # lines of a queries file answered together (planned so by a batch planner)
MEMO_LINES = 65_536  # distinct lines whose answers --queries keeps for lines that repeat them
# ... and the characters of those lines and answers (a full answer is ~4 KB, a line up to 64 K):
# past either, the kept answers are dropped (65,536 full answers held ~260 MB)
MEMO_CHARS = 2**25
# The one-line JSON of --queries answers: no check for cycles (plain values from to_jsonable).
ENCODE = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode

# A batch planner: the plans (or the exception each query raised) of many option objects, in
# order, evaluated together where they share a model and hardware (api/train_batch.py).
BatchPlanner = Callable[[list[dict[str, Any]]], list[Any]]
Convert = Callable[[Any], Any]  # a plan -> its JSON answer (to_jsonable, or some fields of it)


def run_queries(
    path: str,
    plan: Callable[..., Any],
    batch: BatchPlanner | None = None,
    fields: Selection | None = None,
) -> int:
    """One plan per JSON-object line of ``path`` ('-' for stdin), one JSON result per line in
    order; a bad line gives ``{"error", "hint"}`` naming its line number. Exit: the worst line
    (0 all fit, 1 some infeasible, 2 some bad input, 70 an internal error). A file's lines
    are answered QUERY_CHUNK at a time (stdin stays one line at a time: a caller may wait for
    each answer), with ``batch`` planned together; the answers are the same as ``plan`` gives
    line by line. A line whose text an earlier line had is answered from that line's outcome
    (planning is a pure function of the options): sweeps repeat queries, and a plan's JSON is
    most of its cost. With ``fields``, each plan's answer is only those paths of its JSON."""
    _nothing_beside_queries()
    with _frozen_heap():
        return _run_queries(path, plan, batch, fields)


@contextlib.contextmanager
def _frozen_heap() -> Iterator[None]:
    """What is loaded before a sweep (modules, catalog rows, caches) is out of the cyclic
    collector's way while it runs: a full collection during a sweep walked it all (one took
    13 ms of the 93 that 500 distinct training lines take). Given back after (a caller in the
    same process, e.g. a test, may leave garbage that only a collection frees)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _run_queries(
    path: str, plan: Callable[..., Any], batch: BatchPlanner | None, fields: Selection | None
) -> int:
    from rigwise.validate_input import open_text_lines

    worst = EXIT_OK
    interactive = path == "-"  # a caller feeding stdin may wait for each answer
    chunk = 1 if interactive else QUERY_CHUNK
    pending: list[tuple[int, Line]] = []
    memo: dict[str, Any] = {}
    convert = to_jsonable if fields is None else fields.of

    kept = 0  # characters of the lines and answers in memo (counted per line, repeats too)

    def answer() -> None:
        nonlocal worst, kept
        if len(memo) > MEMO_LINES or kept > MEMO_CHARS:
            memo.clear()
            kept = 0
        answers = _answers(pending, plan, batch, memo, convert)
        for (_, line), (text, code) in zip(pending, answers, strict=True):
            kept += len(text) + (len(line) if isinstance(line, str) else 0)
            worst = max(worst, code)
            sys.stdout.write(text)
        pending.clear()
        if interactive:
            sys.stdout.flush()

    for number, line in open_text_lines(path, "queries file", MAX_QUERY_LINE_CHARS):
        if not isinstance(line, str) or line.strip():
            pending.append((number, line))
        if len(pending) >= chunk:
            answer()
    if pending:
        answer()
    sys.stdout.flush()
    return worst


_SEEN = object()  # in place of the options of a line whose text an earlier line had


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


def _nothing_beside_queries() -> None:
    """Each line of --queries gives its own options: a MODEL or --tp beside it was ignored
    without a word (``infer --queries f --search`` planned each line, searched nothing)."""
    given = typed_params(("queries", "as_json", "fields"))
    if given:
        fail(
            f"{', '.join(given)} cannot be combined with --queries: each line gives its own "
            "options.",
            hint='Put them in each line, e.g. {"model": "llama-3.1-8b", "on": "rtx-4090", '
            '"tp": 2}.',
        )


def _answers(
    lines: list[tuple[int, Line]],
    plan: Callable[..., Any],
    batch: BatchPlanner | None,
    memo: dict[str, Any],
    convert: Convert,
) -> list[tuple[str, int]]:
    """(JSON line, exit code) of each numbered line; ``convert``: a plan's JSON. ``memo``:
    line text -> its plan's (JSON line, exit code), or the exception planning it raised
    (answered per line: its message names the line)."""
    # a line seen before parsed to options then: its outcome is in memo, no need to parse it
    parsed = [_SEEN if line in memo else _parse(number, line) for number, line in lines]
    fresh: dict[str, dict[str, Any]] = {}  # line text -> options, planned once below
    for (_, line), query in zip(lines, parsed, strict=True):
        if isinstance(query, dict) and line not in memo:
            fresh.setdefault(line, query)  # type: ignore[arg-type]  # a dict came from a line
    queries = list(fresh.values())
    if batch is not None and len(queries) > 1:
        outcomes = batch(queries)
    else:
        outcomes = [_outcome(plan, query) for query in queries]
    for line, outcome in zip(fresh, outcomes, strict=True):
        memo[line] = outcome
    answers = []
    for (number, line), query in zip(lines, parsed, strict=True):
        seen = query is _SEEN or isinstance(query, dict)
        outcome = memo[line] if seen else query  # type: ignore[index]
        if isinstance(outcome, tuple):  # a plan already written
            answers.append(outcome)
            continue
        result, code = _answer(number, outcome, convert)
        text = ENCODE(result) + "\n"  # already plain JSON values (ASCII)
        if code in (EXIT_OK, EXIT_INFEASIBLE):  # an error's text names its own line number
            memo[line] = (text, code)  # type: ignore[index]
        answers.append((text, code))
    return answers


def _outcome(plan: Callable[..., Any], query: dict[str, Any]) -> Any:
    try:
        return plan(**query)
    except Exception as exc:  # answered (and classified) in _answer, as every line's is
        return exc


def _parse(number: int, line: Line) -> Any:
    """The line's options (a dict), or the exception that says why it has none."""
    from rigwise.validate_input import load_json

    try:
        if isinstance(line, Exception):  # not UTF-8 text
            raise line
        if line is None:
            raise ValueError(f"longer than {MAX_QUERY_LINE_CHARS:,} bytes")
        query = load_json(line, f"line {number}")
        if not isinstance(query, dict):
            raise ValueError("each line must be a JSON object of options")
    except Exception as exc:
        return exc
    return query


def _answer(number: int, outcome: Any, convert: Convert = to_jsonable) -> tuple[Any, int]:
    """A line's JSON result and exit code, from its plan or the exception planning raised."""
    from rigwise.errors import RigwiseError

    where = f"line {number}"
    try:
        if isinstance(outcome, BaseException):
            raise outcome
        result = convert(outcome)
    except RigwiseError as exc:
        message = exc.message if exc.message.startswith(where) else f"{where}: {exc.message}"
        return {"error": message, "hint": exc.hint}, EXIT_BAD_INPUT
    except (ValueError, TypeError) as exc:
        return {"error": f"{where}: {' '.join(str(exc).split())[:300]}", "hint": None}, (
            EXIT_BAD_INPUT
        )
    except Exception as exc:  # a bug on one line must not hide the other lines' answers
        text = f"{where}: internal error: {type(exc).__name__}: {str(exc)[:200]}"
        return {"error": text, "hint": DEBUG_HINT}, EXIT_INTERNAL
    return result, EXIT_OK if getattr(outcome, "fits", True) else EXIT_INFEASIBLE


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
