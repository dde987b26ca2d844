"""Routed experts: GEMMs in prefill thin when few tokens reach each expert; in decode the busiest
expert-parallel rank."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rigwise.estimate.compute import training_factors
from rigwise.estimate.inference_moe import (
    busiest_rank_share,
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


def _exact_busiest_one_token(experts: int, k: int, ranks: int) -> float:
    """E[max over ranks of the experts a token picks on that rank]: k distinct experts drawn
    from ``experts`` split evenly over ``ranks`` (multivariate hypergeometric, enumerated)."""
    per = experts // ranks
    total = 0.0

    def counts(left: int, slots: int) -> list[tuple[int, ...]]:
        if slots == 1:
            return [(left,)] if left <= per else []
        return [
            (c, *rest) for c in range(min(left, per) + 1) for rest in counts(left - c, slots - 1)
        ]

    for split in counts(k, ranks):
        weight = math.prod(math.comb(per, c) for c in split) / math.comb(experts, k)
        total += weight * max(split)
    return total


def test_the_busiest_expert_parallel_rank_reads_more_than_the_mean() -> None:
    """Qwen3-Coder-480B (160 experts, top 8) on 4 EP ranks: one token puts 2 experts on a rank
    on average but 3.49 on the busiest (exact draw), which the binomial form gives within 2 %;
    at 16 tokens (each expert touched with 1 - 0.95^16 = 0.56) the busiest rank still reads
    more, and once every expert is touched all ranks read all of theirs. Without expert
    parallelism (every rank holds a slice of every expert) nothing changes."""
    spec = load_model("qwen3-coder-480b-a35b")
    moe = spec.moe
    assert moe is not None and (moe.num_experts, moe.experts_per_token) == (160, 8)
    one = 1 - (1 - 8 / 160) ** 1
    exact = _exact_busiest_one_token(160, 8, 4)
    assert exact == pytest.approx(3.49, abs=0.01)
    assert busiest_rank_share(spec, _stage(4, ep=4), one) * 40 == pytest.approx(exact, rel=0.02)
    sixteen = 1 - (1 - 8 / 160) ** 16
    busier = busiest_rank_share(spec, _stage(4, ep=4), sixteen)
    assert sixteen < busier < 1.2 * sixteen
    assert busiest_rank_share(spec, _stage(4, ep=4), 1.0) == pytest.approx(1.0)
    assert busiest_rank_share(spec, _stage(8), one) == one
    shares = np.array([one, sixteen, 1.0])
    assert busiest_rank_share(spec, _stage(4, ep=4), shares) == pytest.approx(
        [busiest_rank_share(spec, _stage(4, ep=4), s) for s in shares]
    )
