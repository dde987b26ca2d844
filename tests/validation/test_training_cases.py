"""Each published training memory statistic is compared with the part of rigwise's memory it
counts (validation/training_cases.py MEMORY_QUANTITIES)."""

from __future__ import annotations

import pytest

from rigwise.estimate.compute import training_factors
from rigwise.units import GiB
from rigwise.validation.training import DATA_DIR
from rigwise.validation.training_cases import (
    MEMORY_QUANTITIES,
    assumptions,
    predict,
    predicted_memory_gib,
    rows,
)
from rigwise.validation.training_finetune import FILE, plan_row, predicted_gib
from rigwise.validation.training_runs import (
    TORCHTITAN,
    _model,
    _torchtitan_fabric,
    _torchtitan_setup,
    torchtitan_cases,
)


def test_each_statistic_picks_its_part() -> None:
    tensors, reserved, total = 30.0 * GiB, 32.4 * GiB, 33.8 * GiB
    assert predicted_memory_gib("peak_allocated_gib", tensors, reserved, total) == 30.0
    assert predicted_memory_gib("peak_reserved_gib", tensors, reserved, total) == 32.4
    assert predicted_memory_gib("peak_memory_gib", tensors, reserved, total) == 33.8
    with pytest.raises(ValueError, match="peak_reserved_gib"):
        predicted_memory_gib("memory_gib", tensors, reserved, total)


def test_every_training_memory_row_names_a_known_statistic() -> None:
    titan = [r for r in rows(DATA_DIR, TORCHTITAN) if r["peak_memory_gib"]]
    finetune = rows(DATA_DIR, FILE)
    assert titan and finetune
    assert {r["memory_quantity"] for r in titan} == {"peak_reserved_gib"}
    assert {r["quantity"] for r in finetune} <= set(MEMORY_QUANTITIES)
    # The reserved counter is the commonest: Answer.AI, torchtune and Axolotl read it.
    assert sum(r["quantity"] == "peak_reserved_gib" for r in finetune) >= 20


def test_a_reserved_row_leaves_out_the_cuda_context_and_nccl_buffers() -> None:
    # torchtitan logs reserved_bytes.all.peak: 8 GPUs, so both the CUDA context (0.6e9 bytes,
    # efficiency_training.csv memory_reserved_bytes) and NCCL's buffers (0.9e9) are outside it.
    row = next(r for r in rows(DATA_DIR, TORCHTITAN) if "B200" in r["table"])
    assume = assumptions(DATA_DIR)
    fab = _torchtitan_fabric(row, assume)
    work, layout = _torchtitan_setup(row, assume)
    ev = predict(_model("llama-3.1-8b"), work, layout, fab)
    factors = training_factors(fab.accelerator.id)
    outside = factors.memory_reserved_bytes + factors.nccl_buffer_bytes
    assert outside == pytest.approx(1.5e9)
    memory = (c for c in torchtitan_cases(DATA_DIR) if c.metric == "memory_gib")
    case = next(c for c in memory if "B200" in c.label)
    assert case.predicted == pytest.approx((float(ev.memory.total[0]) - outside) / GiB)


def test_fine_tune_rows_compare_each_counter_with_its_part() -> None:
    by_quantity: dict[str, dict[str, str]] = {}
    for row in rows(DATA_DIR, FILE):
        by_quantity.setdefault(row["quantity"], row)
    assert set(by_quantity) == set(MEMORY_QUANTITIES)
    for quantity, row in by_quantity.items():
        memory = plan_row(row).memory_per_gpu
        expected = {
            "peak_allocated_gib": memory.tensor_bytes,
            "peak_reserved_gib": memory.total_bytes - memory.outside_allocator_bytes,
            "peak_memory_gib": memory.total_bytes,
        }[quantity]
        assert predicted_gib(row, memory) == pytest.approx(expected / GiB)
    # A run on more than one GPU has NCCL's buffers outside the allocator too.
    multi = next(r for r in rows(DATA_DIR, FILE) if int(r["gpus"]) > 1)
    factors = training_factors(plan_row(multi).accelerator)
    outside = plan_row(multi).memory_per_gpu.outside_allocator_bytes
    assert outside == pytest.approx(factors.memory_reserved_bytes + factors.nccl_buffer_bytes)


def test_only_the_mid_2025_b200_runs_recompute_their_cudnn_attention() -> None:
    # torchtitan 6fc499f (Aug 2025) runs cuDNN SDPA on B200 (PR #1196) outside its per-op SAC
    # _save_list (PR #2095 added it in Dec 2025); the H100 runs use flash SDPA, which it saves.
    assume = assumptions(DATA_DIR)
    recomputed = {
        r["table"]
        for r in rows(DATA_DIR, TORCHTITAN)
        if not _torchtitan_setup(r, assume)[0].sac_saves_attention
    }
    assert recomputed == {"torchtitan mxfp8 B200"}
