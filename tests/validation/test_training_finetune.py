"""Fine-tuning peak memory against published runs that were never fitted on."""

from __future__ import annotations

import statistics

from rigwise.validation.training import DATA_DIR
from rigwise.validation.training_finetune import finetune_memory_cases, finetune_verdicts

CAPACITY_GIB = 24.0  # the RTX 3090 of the Answer.AI rows


def test_independent_fine_tune_memory_median_within_ten_percent() -> None:
    cases = list(finetune_memory_cases(DATA_DIR))
    assert len(cases) >= 10 and {c.role for c in cases} == {"independent"}
    errors = [abs(c.error_pct) for c in cases]
    assert statistics.median(errors) <= 10.0
    # Every run fitted in its 24 GB GPUs, and the prediction says so.
    assert all(c.predicted < CAPACITY_GIB for c in cases if c.measured < CAPACITY_GIB)


def test_fits_and_oom_verdicts_are_measured_on_both_classes() -> None:
    verdicts = finetune_verdicts(DATA_DIR)
    assert verdicts.oom_rows >= 5 and verdicts.rows - verdicts.oom_rows >= 10
    assert verdicts.share_right >= 0.9
    assert len(verdicts.mismatches) == verdicts.rows - verdicts.right
