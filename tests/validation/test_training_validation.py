"""Golden tests: rigwise's training estimates against the published runs it keeps.

Targets (issue 4): median |error| <= 10% for step time / throughput per GPU per source and for
memory where published. Keys carry the row role: ``fit`` rows set a factor (in-sample bounds
that catch regressions, not evidence of accuracy), ``independent`` rows never did. Sources that
miss a target have their measured bound here, named as a miss, so a regression still fails.
The comparison with Calculon is made on Calculon's 8 rows of Korthikanti Table 5 (issue 15).
"""

from __future__ import annotations

import functools

import pytest

from rigwise.validation.stats import Comparison
from rigwise.validation.training import TrainingValidation, validate_training

# (source, metric, role) -> allowed median |error| in percent.
MEDIAN_TARGET = {
    ("Megatron-LM 2021 Table 1", "step_s", "fit"): 10.0,
    ("Korthikanti 2022 Table 5", "step_s", "fit"): 10.0,
    ("Korthikanti 2022 Table 4", "layer_ms", "fit"): 10.0,
    ("Korthikanti 2022 Figure 1 (Calculon)", "memory_gib", "formula"): 10.0,
    ("llm-foundry A100", "tokens_per_s_per_gpu", "independent"): 10.0,
    ("torchtitan", "tokens_per_s_per_gpu", "fit"): 10.0,
    ("torchtitan", "tokens_per_s_per_gpu", "independent"): 10.0,
    ("torchtitan", "memory_gib", "independent"): 10.0,
    # MISSES of the 10% target (kept as regression bounds): the Llama 3 405B holdout.
    ("holdout (not in shared/)", "model_tflops_per_gpu", "independent"): 25.0,
    ("holdout (not in shared/)", "hardware_tflops_per_gpu", "independent"): 10.0,
}
# Per-row bound for the rows of the Megatron/Korthikanti sources (Calculon's max is 8.87%).
ROW_BOUND = {
    "Korthikanti 2022 Table 5": 8.87,
    "Korthikanti 2022 Table 4": 8.87,
    "Megatron-LM 2021 Table 1": 15.0,
}


@functools.cache
def result() -> TrainingValidation:
    return validate_training()


def _rows() -> list[Comparison]:
    return [c for c in result().comparisons if c.source in ROW_BOUND]


@pytest.mark.parametrize("key", sorted(MEDIAN_TARGET), ids="|".join)
def test_median_error_per_source(key: tuple[str, str, str]) -> None:
    stats = {(s.source, s.metric, s.role): s for s in result().stats}
    assert key in stats, f"no rows for {key}"
    assert stats[key].median_abs_error_pct <= MEDIAN_TARGET[key]


def test_calculon_is_compared_on_its_own_eight_rows() -> None:
    (calculon,) = [t for t in result().tools if t.tool == "Calculon"]
    assert calculon.like_for_like and calculon.rigwise_rows == 8
    assert calculon.roles == ("fit",)  # in-sample for rigwise: said so in the output
    # regression bound, measured at writing: 3.71 % (Calculon reports 3.65 %)
    assert calculon.rigwise_mean_abs_error_pct <= 4.0


def test_the_formula_rows_are_not_reported_as_validation() -> None:
    formula = [c for c in result().comparisons if c.role == "formula"]
    assert formula and {c.source for c in formula} == {"Korthikanti 2022 Figure 1 (Calculon)"}
    assert all(c.role != "independent" for c in result().comparisons if "Figure" in c.source)


@pytest.mark.parametrize("row", _rows(), ids=lambda c: f"{c.source}|{c.label}")
def test_each_megatron_row(row: Comparison) -> None:
    assert abs(row.error_pct) <= ROW_BOUND[row.source]


def test_every_packaged_source_is_covered() -> None:
    sources = {c.source for c in result().comparisons}
    assert {s for s, _, _ in MEDIAN_TARGET} <= sources


def test_the_techniques_column_names_the_float8_recipe() -> None:
    from rigwise.validation.training_runs import _float8_scaling

    assert _float8_scaling("fsdp + torch.compile + mxfp8 (mxfp8_cublas_rceil)") == "mxfp8"
    assert _float8_scaling("torch.compile, async tp, float8 rowwise") == "rowwise"
    assert _float8_scaling("fsdp + torch.compile + float8") == "tensorwise"
