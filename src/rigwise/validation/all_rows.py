"""Every packaged comparison, inference and training together (what the interval table is
computed from). Its own module: ``validation.inference`` uses ``validation.intervals``, so the
intervals module cannot call the validation runs without an import cycle."""

from __future__ import annotations

from rigwise.validation.inference import validate_inference
from rigwise.validation.stats import Comparison
from rigwise.validation.training import validate_training


def all_comparisons() -> list[Comparison]:
    """Every packaged inference and training comparison (the validation runs of both)."""
    return [*validate_inference().comparisons, *validate_training().comparisons]
