"""``--fields a,b.c`` of ``infer`` and ``train``: only those dotted paths of each plan's JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from rigwise.json_fields import Selection

INFER_FIELDS_EXAMPLE = "verdict,decode.tokens_per_s,memory.total_bytes"
TRAIN_FIELDS_EXAMPLE = "fits,tokens_per_s,memory_per_gpu.total_bytes"  # no verdict, no decode


def fields_help(example: str) -> str:
    """``--fields``'s help, with an ``example`` of paths the command's plans have."""
    return (
        "With --json or --queries: print only these comma-separated dotted paths of the plan's "
        "JSON, as one object keyed by them (null where a plan has none), e.g. "
        f"{example}. Faster: only those parts are written."
    )


FIELDS_HELP = fields_help(INFER_FIELDS_EXAMPLE)


def fields_option(help_text: str = FIELDS_HELP) -> Any:
    return click.option("--fields", "fields", help=help_text)


def fields_of(text: str | None, cls: type, command: str, *, as_json: bool, queries: bool) -> (
    Selection | None
):  # fmt: skip
    """The checked ``--fields`` of ``command`` (None without it): bad input when a path is not
    one of ``cls``'s JSON, or when there is no JSON to take them from."""
    if text is None:
        return None
    from rigwise.cli._common import fail
    from rigwise.json_fields import selection

    if not (as_json or queries):
        fail("--fields picks from the plan's JSON: give --json too (or --queries FILE).")
    return selection(text, cls, command)


def plan_without_levers(plan: Any) -> Any:
    """``plan(**query)`` with the levers off where the line leaves them on (True or not
    given): the levers are only a plan's ``levers`` list (each a plan of changed options),
    so a selection without ``levers`` gets the same values at a fraction of the work. A line
    whose ``levers`` is not a bool keeps it (and its error)."""

    def planned(**query: Any) -> Any:
        if query.get("levers", True) is True:
            query = {**query, "levers": False}
        return plan(**query)

    return planned


__all__ = [
    "FIELDS_HELP",
    "INFER_FIELDS_EXAMPLE",
    "TRAIN_FIELDS_EXAMPLE",
    "fields_help",
    "fields_of",
    "fields_option",
    "plan_without_levers",
]
