"""Routed-expert GEMMs in prefill: thin when few tokens reach each expert."""

from __future__ import annotations

import pytest

from rigwise.estimate.compute import training_factors
from rigwise.estimate.inference_moe import (
    expert_gemm_factor,
    expert_smallest_dim,
    routed_expert_flops_per_token,
)
from rigwise.estimate.inference_stages import Stage
from rigwise.estimate.model_memo import flops_parts
from rigwise.hardware import get_accelerator
from rigwise.models import load_model


def _stage(tp: int, ep: int = 1) -> Stage:
    return Stage(0, 0, get_accelerator("h100-sxm"), tp, 1.0, None, None, None, ep=ep)


def test_qwen3_235b_expert_gemms_are_thin_at_tp8() -> None:
    """Qwen3-235B-A22B: 128 experts, top 8, expert width 1536, hidden 4096, 94 MoE layers.
    A step of 8192 tokens gives 8192 x 8 / 128 = 512 tokens per expert; TP 8 splits each
    expert to 1536 / 8 = 192 columns, the smallest dimension. With d_half 160 (training's
    gemm_half_dim) the experts reach 192 / 352 of the large-GEMM efficiency."""
    spec = load_model("qwen3-235b-a22b")
    assert routed_expert_flops_per_token(spec) == pytest.approx(2 * 94 * 8 * 3 * 4096 * 1536)
    assert expert_smallest_dim(spec, _stage(8), 8192) == pytest.approx(192)
    assert expert_smallest_dim(spec, _stage(8, ep=8), 8192) == pytest.approx(512)  # whole experts
    assert training_factors("h100-sxm").gemm_half_dim == pytest.approx(160)
    matmul = flops_parts(spec, 1)[0]
    share = 2 * 94 * 8 * 3 * 4096 * 1536 / matmul
    factor = expert_gemm_factor(spec, _stage(8), 8192, matmul)
    assert factor == pytest.approx(1 + share * (352 / 192 - 1))
    assert factor > expert_gemm_factor(spec, _stage(8, ep=8), 8192, matmul) > 1.0


def test_a_dense_model_is_untouched() -> None:
    spec = load_model("llama-3.1-70b")
    assert expert_gemm_factor(spec, _stage(8), 8192, flops_parts(spec, 1)[0]) == 1.0
