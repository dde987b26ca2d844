"""A stage's catalog factors (``StageFactors``) are kept per (context, stage) objects: kept
factors give the numbers fresh ones give, and another context (another calibration) is looked
up again."""

from __future__ import annotations

from dataclasses import replace

from tests.estimate.test_inference_physics import context, dense_model, gpu, stage

from rigwise.estimate import inference_factors
from rigwise.estimate.inference import prefill_stage_parts
from rigwise.estimate.inference_batched import prefill_seconds_per_token_batched


def test_prefill_factors_kept_are_the_fresh_ones() -> None:
    ctx, one = context(dense_model()), stage(gpu())
    kept = prefill_stage_parts(ctx, one, 3000)
    batched = prefill_seconds_per_token_batched(ctx, (one,), 3000)
    inference_factors._FACTORS.clear()
    assert prefill_stage_parts(ctx, one, 3000) == kept
    assert prefill_seconds_per_token_batched(ctx, (one,), 3000) == batched


def test_prefill_factors_follow_the_context_object() -> None:
    ctx, one = context(dense_model()), stage(gpu())
    kept = prefill_stage_parts(ctx, one, 3000)
    slower = replace(
        ctx, calibration={**(ctx.calibration or {}), "prefill_compute_efficiency": 0.1}
    )
    assert prefill_stage_parts(slower, one, 3000)["compute"] > kept["compute"]
    assert prefill_stage_parts(ctx, one, 3000) == kept  # the first context's, still
