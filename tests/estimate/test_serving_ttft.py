"""Time to first token of a running batch admitted together (closed-loop benchmark clients):
the prompts ahead are prefilled first come, first served in scheduler steps of T tokens."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rigwise.estimate.engine_rules import engine_defaults
from rigwise.estimate.serving import (
    Costs,
    estimate_serving,
    wave_prefill_tokens,
    wave_ttft_seconds,
)
from rigwise.units import GiB


def _exact_mean_tokens(admitted: int, prompt: int, budget: int) -> float:
    """Request k's first token comes at the end of step ceil(k P / T), after
    min(step x T, C x P) prompt tokens: the scheduler, request by request."""
    done = [min(math.ceil(k * prompt / budget) * budget, admitted * prompt) for k in range(1, 33)]
    return sum(done[:admitted]) / admitted


def test_prompts_that_fit_one_step_all_wait_for_that_step() -> None:
    # 4 x 256 = 1024 tokens <= 2048: one step prefills them all, each waits for 1024 tokens.
    assert wave_prefill_tokens(4, 256, 2048) == pytest.approx(1024)
    assert wave_prefill_tokens(1, 256, 2048) == pytest.approx(256)  # alone: its own prompt


def test_a_wave_waits_for_half_the_prompts_ahead_plus_half_a_step() -> None:
    # 32 x 256 in steps of 2048: (32 + 1) / 2 x 256 + 2048 / 2 = 4224 + 1024 = 5248 tokens.
    assert wave_prefill_tokens(32, 256, 2048) == pytest.approx(5248)
    # The scheduler itself: 8 requests a step over 4 steps, mean 2.5 steps = 5120 tokens.
    assert _exact_mean_tokens(32, 256, 2048) == pytest.approx(5120)
    assert wave_prefill_tokens(32, 256, 2048) == pytest.approx(5120, rel=0.03)


def test_wave_ttft_adds_the_prefill_ahead_and_one_decode_step_per_step_waited() -> None:
    # 5248 tokens: 4992 beyond our own at 1e-5 s each, ceil(5248 / 2048) = 3 steps of 5 ms.
    ttft = wave_ttft_seconds(32, 256, 2048, (0.01, 1e-5), 0.005)
    assert ttft == pytest.approx(0.01 + 4992e-5 + 3 * 0.005)
    # Arrays (the serving search): the same formula element-wise.
    many = wave_ttft_seconds(np.array([1, 4, 32]), 256, 2048, (0.01, 1e-5), 0.005)
    assert many == pytest.approx([0.015, 0.01 + 768e-5 + 0.005, 0.01 + 4992e-5 + 0.015])


def test_serving_ttft_grows_with_the_running_batch() -> None:
    costs = Costs(
        step_seconds=lambda batch: 0.005,
        prefill_seconds_per_token=1e-5,
        single_prefill_seconds=0.01,
        compute_bound_at=lambda batch: False,
        chunk_tokens=2048,
    )
    result = estimate_serving(32, 64, 256, 128, costs)
    assert result.queue_wait_s == 0.0
    assert result.ttft_s == pytest.approx(0.01 + 4992e-5 + 3 * 0.005)
    # A request lives one cycle, 32 x 256 x 1e-5 + 128 x 5 ms = 0.72192 s; the rest after its
    # first token spreads over its other 127 tokens (the later prompts interleave).
    assert result.tpot_s == pytest.approx((0.72192 - (0.01 + 4992e-5 + 0.015)) / 127)
    alone = estimate_serving(1, 64, 256, 128, costs)
    assert alone.tpot_s == pytest.approx(0.005)  # never less than a decode step


def test_vllm_step_budget_follows_device_memory() -> None:
    """vLLM get_batch_defaults: OpenAI server max_num_batched_tokens 2048 below 70 GiB,
    8192 from 70 GiB (engine_defaults.csv step_tokens)."""
    assert engine_defaults("vllm", 24 * GiB).step_tokens == 2048
    assert engine_defaults("vllm", 80e9).step_tokens == 8192
    assert engine_defaults("sglang", 80e9).step_tokens == 0  # its workspace applies
    # max_num_seqs: 256 below 70 GiB, 1024 from 70 GiB
    assert engine_defaults("vllm", 24 * GiB).max_sequences == 256
    assert engine_defaults("vllm", 80e9).max_sequences == 1024
