"""What serving and decode keep between calls gives the numbers computed afresh: a replica's
steps and compute bound per batch (``ReplicaSteps``), a stage's catalog factors per (context,
stage) pair, and the ``intervals`` entries of a plan's JSON per setup (each plan its own copy)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from tests.estimate.test_inference_physics import context, dense_model, gpu, stage

from rigwise.api.infer import plan_inference
from rigwise.estimate import inference, inference_factors
from rigwise.estimate.identity_memo import IdentityMemo
from rigwise.estimate.inference import decode_stage_parts, kernel_sums
from rigwise.estimate.inference_batched import ReplicaSteps, decode_step_seconds
from rigwise.serialize import to_jsonable


def test_replica_steps_are_the_steps_computed_afresh() -> None:
    ctx = context(dense_model())
    stages = (stage(gpu(), 0.5), stage(gpu(), 0.5, index=1))
    steps = ReplicaSteps(ctx, stages, None, 1100)
    for batch in (1, 7, 256, 7, 1):  # asked again: kept, and the same
        assert steps.step(batch) == decode_step_seconds(ctx, stages, None, 1100, batch)
        parts = decode_stage_parts(ctx, stages[0], 1100, batch, kernels=True)
        assert steps.compute_bound(batch) == (parts["compute"] > parts["memory_bandwidth"])
    assert steps.compute_bound(256) and not steps.compute_bound(1)  # the GEMMs at 256: FLOPs


def test_decode_factors_follow_the_context_object_not_a_stale_copy() -> None:
    ctx, one = context(dense_model()), stage(gpu())
    kept = decode_stage_parts(ctx, one, 2048, 1)
    inference_factors._FACTORS.clear()
    assert decode_stage_parts(ctx, one, 2048, 1) == kept  # kept factors = fresh ones
    slower = replace(
        ctx, calibration={**(ctx.calibration or {}), "decode_bandwidth_efficiency": 0.4}
    )
    # a new context (another calibration) is looked up again: half the bandwidth, twice the time
    assert decode_stage_parts(slower, one, 2048, 1)["memory_bandwidth"] > kept["memory_bandwidth"]


def test_each_plan_json_has_its_own_intervals_entries() -> None:
    first, second = (
        to_jsonable(plan_inference(model="llama-3.1-8b", on="rtx-4090", prompt=p, levers=False))
        for p in (256, 512)
    )
    assert first["intervals"] == second["intervals"]  # one setup: the same regimes
    first["intervals"]["decode"]["notes"].append("changed by a caller")
    first["intervals"]["decode"]["rows"] = -1
    again = to_jsonable(plan_inference(model="llama-3.1-8b", on="rtx-4090", levers=False))
    assert again["intervals"] == second["intervals"]
    assert "changed by a caller" not in again["intervals"]["decode"]["notes"]


def test_identity_memo_keeps_a_value_per_object_and_key_not_per_equal_value() -> None:
    memo: IdentityMemo[int] = IdentityMemo(limit=2)
    one, equal = [1.0], [1.0]  # equal values, two objects
    calls: list[int] = []

    def make(value: int) -> int:
        calls.append(value)
        return value

    assert memo.get((one,), 4, lambda: make(1)) == 1
    assert memo.get((one,), 4, lambda: make(2)) == 1  # kept
    assert memo.get((equal,), 4, lambda: make(3)) == 3  # another object: made again
    assert memo.get((one,), 8, lambda: make(4)) == 4  # another key: made again (limit: emptied)
    assert calls == [1, 3, 4]


def test_kernel_sums_add_as_sum_does() -> None:
    """The loop adds each column in order from 0, as ``sum`` did: the same floats, and arrays
    element-wise (a search's batches)."""
    kernels = ((0.1, 0.7), (0.2, 1e-17), (0.3, 3.0))
    assert kernel_sums(*kernels) == (sum(k[0] for k in kernels), sum(k[1] for k in kernels))
    batches = np.array([1.0, 2.0])
    moved, worked = kernel_sums((batches, batches * 2), (batches, 0.5))
    assert moved.tolist() == [2.0, 4.0] and worked.tolist() == [2.5, 4.5]


def test_a_stages_cached_attention_width_and_label_follow_its_fields() -> None:
    wide = stage(gpu(), tp=4)
    assert (wide.attention_tp, wide.label) == (4, "node0/stage0: 4x test-gpu")
    ranks = replace(wide, attention_dp=2, index=1)  # a new stage: its own values
    assert (ranks.attention_tp, ranks.label) == (2, "node0/stage1: 4x test-gpu")
    assert wide.attention_tp == 4


def test_a_batchs_step_costs_kept_are_the_fresh_ones_at_every_context() -> None:
    """What a batch costs a stage at any context is kept per (context, stage) and batch; an
    array of batches (a search) is computed, element for element the same."""
    ctx, one = context(dense_model()), stage(gpu())
    kept = [decode_stage_parts(ctx, one, length, 8, kernels=True) for length in (512, 4096)]
    inference._STEPS.clear()
    fresh = [decode_stage_parts(ctx, one, length, 8, kernels=True) for length in (512, 4096)]
    assert kept == fresh
    assert kept[1]["memory_bandwidth"] > kept[0]["memory_bandwidth"]  # the longer cache
    batches = decode_stage_parts(ctx, one, 4096, np.array([1, 8]), kernels=True)
    for index, batch in enumerate((1, 8)):
        single = decode_stage_parts(ctx, one, 4096, batch, kernels=True)
        assert {k: float(np.asarray(v).reshape(-1)[index] if np.ndim(v) else v)
                for k, v in batches.items()} == single  # fmt: skip
