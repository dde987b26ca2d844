"""``--queries``: one plan per JSON line of a file, answered in order with the same exit
semantics for every command (``infer``, ``train``); lines are planned a chunk at a time, a
batch planner's lines together, and a repeated line is answered from its first plan."""

from __future__ import annotations

import contextlib
import gc
import json
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from rigwise.cli._common import (
    DEBUG_HINT,
    EXIT_BAD_INPUT,
    EXIT_INFEASIBLE,
    EXIT_INTERNAL,
    EXIT_OK,
    fail,
    typed_params,
)
from rigwise.serialize import to_jsonable

if TYPE_CHECKING:
    from rigwise.json_fields import Selection
    from rigwise.validate_input import Line


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
    from rigwise.errors import InputError
    from rigwise.validate_input import load_json

    try:
        if isinstance(line, Exception):  # not UTF-8 text
            raise line
        if line is None:
            raise InputError(
                f"line {number} is longer than {MAX_QUERY_LINE_CHARS:,} bytes.",
                hint="Each line is one JSON object of options (a few hundred bytes): check "
                "that the lines end with a newline.",
            )
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
