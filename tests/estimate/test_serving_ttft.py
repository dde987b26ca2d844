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
    prefill_collision_seconds,
    staggered_ttft_seconds,
    wave_prefill_tokens,
    wave_ttft_seconds,
)
from rigwise.units import GiB
from rigwise.validation.inference_serving import benchmark_ttft_seconds, in_phase_share


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
    assert result.ttft_wave_s == pytest.approx(0.01 + 4992e-5 + 3 * 0.005)
    # Staggered arrivals: half a running step, then its own prompt; decodes here cost nothing;
    # M/D/1 wait rho S / (2 (1 - rho)), S = 2.56 ms, rho = the 31 others' prefill / cycle:
    # 31 x 2.56 ms / 721.92 ms = 0.10993, wait 0.158 ms.
    rho = 31 * 0.00256 / 0.72192
    assert result.ttft_s == pytest.approx(0.005 / 2 + 0.01 + rho * 0.00256 / (2 * (1 - rho)))
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


def _staggered_costs() -> Costs:
    # a decode step of B: 10 ms + 0.1 ms per sequence; one 256-token prompt alone: 30 ms;
    # 2 ms of API-server work per request.
    return Costs(
        step_seconds=lambda batch: 0.010 + 0.0001 * batch,
        prefill_seconds_per_token=1e-4,
        single_prefill_seconds=0.030,
        compute_bound_at=lambda batch: False,
        chunk_tokens=2048,
        request_overhead_s=0.002,
    )


def test_a_desynchronised_closed_loop_pays_half_a_step_its_prompt_and_the_running_decodes() -> None:
    # batch 16: step(16) = 11.6 ms, step(1) = 10.1 ms:
    # 11.6 / 2 + 30 + (11.6 - 10.1) = 5.8 + 30 + 1.5 = 37.3 ms, + 2 ms API server = 39.3 ms.
    assert staggered_ttft_seconds(16, 0.030, 0.0116, 0.0101) == pytest.approx(0.0373)
    assert staggered_ttft_seconds(1, 0.030, 0.0101, 0.0101) == pytest.approx(0.030)
    # Collisions: one prompt 256 x 0.1 ms = 25.6 ms of batched prefill; a cycle is 16 x 25.6 +
    # 128 x 11.6 = 1894.4 ms; the 15 others prefill 384 ms of it: rho = 0.2027, M/D/1 wait
    # rho S / (2 (1 - rho)) = 3.254 ms.
    rho = 15 * 0.0256 / 1.8944
    collision = rho * 0.0256 / (2 * (1 - rho))
    assert collision == pytest.approx(0.0032542, rel=1e-4)
    assert prefill_collision_seconds(16, 0.0256, 0.4096 + 1.4848) == pytest.approx(collision)
    result = estimate_serving(16, 64, 256, 128, _staggered_costs())
    assert result.ttft_s == pytest.approx(0.0393 + collision)
    # The wave: 16 x 256 = 4096 tokens in steps of 2048 -> min(4096, 8.5 x 256 + 1024 = 3200);
    # 30 ms + (3200 - 256) x 0.1 ms + 2 steps x 11.6 ms + 2 ms = 349.6 ms.
    assert result.ttft_wave_s == pytest.approx(0.3496)


def test_queued_requests_keep_the_wave_and_the_queue_wait() -> None:
    result = estimate_serving(128, 16, 256, 128, _staggered_costs())
    assert result.queue_wait_s > 0
    assert result.ttft_s == pytest.approx(result.ttft_wave_s)


def test_a_benchmark_mean_holds_its_first_wave() -> None:
    """300 prompts at concurrency 16, every later arrival desynchronised (share 0): 16 arrive
    together, the other 284 staggered."""
    result = estimate_serving(16, 64, 256, 128, _staggered_costs())
    rho = 15 * 0.0256 / 1.8944
    staggered = 0.0393 + rho * 0.0256 / (2 * (1 - rho))
    mean = benchmark_ttft_seconds(result, 0.0, 300, "mean")
    assert mean == pytest.approx(16 / 300 * 0.3496 + 284 / 300 * staggered)
    assert benchmark_ttft_seconds(result, 0.0, 300, "median") == pytest.approx(staggered)
    # Equal lengths (--ignore-eos, share 1): every cycle is a wave, mean and median.
    assert benchmark_ttft_seconds(result, 1.0, 300, "median") == pytest.approx(0.3496)
    assert benchmark_ttft_seconds(result, 1.0, 300, "mean") == pytest.approx(0.3496)
    assert benchmark_ttft_seconds(result, 1.0, 0, "median") == pytest.approx(0.3496)


def test_waves_return_but_lose_the_requests_that_end_early() -> None:
    """Half of each wave runs to the cap (share 0.5): cycle j of 16 requests keeps 16 x 0.5^j
    in phase, a wave of c waiting (c - 1) / 15 of the full wave's excess over the staggered
    figure: 16 x 1 x 15/15 + 16 x 0.5 x 7/15 + 16 x 0.25 x 3/15 + 16 x 0.125 x 1/15 (then
    waves of one, no excess) = 16 + 3.7333 + 0.8 + 0.1333 = 20.6667 of 300 requests."""
    result = estimate_serving(16, 64, 256, 128, _staggered_costs())
    staggered, wave = result.ttft_s, result.ttft_wave_s
    mean = benchmark_ttft_seconds(result, 0.5, 300, "mean")
    assert mean == pytest.approx(staggered + 20.6667 / 300 * (wave - staggered), rel=1e-5)
    # In waves: 16 x (1 + 0.5 + ... ) = 32 of 300, under half: the median is staggered.
    assert benchmark_ttft_seconds(result, 0.5, 300, "median") == pytest.approx(staggered)
    # With 40 prompts (16 + 16 + 8), 16 + 8 + 8 x 0.25 = 26 of 40 arrive in waves: the wave.
    assert benchmark_ttft_seconds(result, 0.5, 40, "median") == pytest.approx(wave)


def test_the_share_in_phase_is_the_mean_output_over_the_cap() -> None:
    # mushfiqrahman.dev RTX 4090 sweep, concurrency 48: 1190 output tok/s at 11.87 req/s is
    # 100.25 tokens a request of the 128 asked: 0.783 of each wave returns with the next.
    assert in_phase_share("staggered", 128, 1190 / 11.87) == pytest.approx(0.7832, abs=1e-4)
    assert in_phase_share("wave", 128, 0.0) == 1.0  # --ignore-eos: all run to the cap
    assert in_phase_share("staggered", 128, 0.0) == 0.0  # not published: desynchronised
    assert in_phase_share("", 128, 140.0) == 1.0  # never more than all
