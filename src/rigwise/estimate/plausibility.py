"""Plausibility of a predicted MFU against the best published for its GPU generation.

``catalog/data/training_mfu_records.csv`` holds the best model FLOPs utilisation published for
LLM training per accelerator family and precision; a plan above it carries a note naming the
record, so a user sees why the number should be read as optimistic.
"""

from __future__ import annotations

import fnmatch
from functools import cache

from rigwise.catalog.loader import read_csv

FILE = "training_mfu_records.csv"


@cache
def _records() -> tuple[dict[str, str], ...]:
    return read_csv(FILE)


def best_published_mfu(accelerator_id: str, precision: str) -> dict[str, str] | None:
    """The record row for this accelerator family and precision (fp16 reads as bf16)."""
    wanted = "bf16" if precision in ("bf16", "fp16") else precision
    for row in _records():
        if row["precision"] == wanted and fnmatch.fnmatch(accelerator_id, row["applies_to"]):
            return row
    return None


def plausibility_notes(accelerator_id: str, precision: str, mfu: float) -> tuple[str, ...]:
    """A note when ``mfu`` exceeds the best published MFU of the generation and precision."""
    row = best_published_mfu(accelerator_id, precision)
    if row is None or mfu <= float(row["best_mfu"]):
        return ()
    return (
        f"MFU {mfu:.1%} is above the best published for {row['applies_to'].rstrip('*')} "
        f"{row['precision']} ({float(row['best_mfu']):.1%}: {row['run']}; {row['source']}); "
        "the estimate assumes every overlap and kernel works as modelled: read it as an upper "
        "bound",
    )
