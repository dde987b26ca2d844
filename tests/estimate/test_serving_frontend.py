"""The API server as a serving bottleneck (``estimate/serving_frontend``): one process streams
every output token, so a replica serves at most ``1 / frontend_token_s`` tokens/s; the running
batch settles where the engine keeps pace, and a burst waits its turn at that rate."""

from __future__ import annotations

import numpy as np
import pytest

from rigwise.api.infer import plan_inference
from rigwise.api.serving_search import search_serving_layouts
from rigwise.estimate.engine_overheads import engine_overheads
from rigwise.estimate.serving import Costs, estimate_serving
from rigwise.estimate.serving_frontend import (
    burst_ttft_seconds,
    frontend_batch,
    frontend_cycle_seconds,
)
from rigwise.validation.inference_serving import benchmark_ttft_seconds

# engine_overheads.csv vllm frontend_token_us: vllm-project/vllm PR #12287, 'Before' run
# (Llama-3.2-1B, one A100, V1, 400 in flight): 12850.45 output tokens/s -> 77.8 us a token.
FRONTEND_S = 77.8e-6


def _costs(frontend_token_s: float) -> Costs:
    """A decode step of 1.7 ms + 64 us per sequence, prompts free: the engine alone reaches
    B / (1.7 ms + 64 us B) tokens/s, 15.6k at 500 sequences, more than the front end's 12.85k."""
    return Costs(
        step_seconds=lambda batch: 1.7e-3 + 64e-6 * batch,
        prefill_seconds_per_token=0.0,
        single_prefill_seconds=0.0,
        compute_bound_at=lambda batch: False,
        chunk_tokens=8192,
        frontend_token_s=frontend_token_s,
    )


def test_vllm_carries_the_front_end_cost_of_its_fit_row_and_no_other_engine_does() -> None:
    vllm = engine_overheads("vllm", "nvidia-hbm")
    assert vllm.frontend_token_s == pytest.approx(1.0 / 12850.45, rel=1e-3)
    for engine in ("sglang", "tensorrt-llm", "llama.cpp", "ollama", "transformers", "mlx"):
        assert engine_overheads(engine, "nvidia-hbm").frontend_token_s == 0.0


def test_the_front_end_stretches_a_cycle_only_when_it_is_the_slower() -> None:
    # 100 sequences x 128 tokens x 77.8 us = 0.9958 s of front-end work per cycle.
    assert frontend_cycle_seconds(0.5, 100, 128, FRONTEND_S) == pytest.approx(0.99584)
    assert frontend_cycle_seconds(1.5, 100, 128, FRONTEND_S) == 1.5
    assert frontend_cycle_seconds(0.5, 100, 128, 0.0) == 0.5  # no factor: the engine's
    batches = np.array([10, 100, 1000])
    assert frontend_cycle_seconds(np.full(3, 0.5), batches, 128, FRONTEND_S) == pytest.approx(
        [0.5, 0.99584, 9.9584]
    )


def test_the_batch_settles_where_the_engine_keeps_pace_with_the_front_end() -> None:
    # B x 77.8 us >= 1.7 ms + 64 us B  <=>  B >= 1.7 ms / 13.8 us = 123.2: the 124th sequence.
    def cycle(batch: int) -> float:
        return 128 * (1.7e-3 + 64e-6 * batch)

    assert frontend_batch(500, 128, cycle, FRONTEND_S) == 124
    assert frontend_batch(100, 128, cycle, FRONTEND_S) == 100  # the engine is the slower there
    assert frontend_batch(500, 128, cycle, 0.0) == 500
    assert frontend_batch(500, 128, cycle, 60e-6) == 500  # an engine never as fast as the cap


def test_a_burst_waits_for_the_first_cohort_then_one_slot_per_completion() -> None:
    # 500 at once, 66 admitted (first token 0.1 s, they live 0.8 s), then one slot every
    # 1 / 94.9 s: the j-th of the 434 others starts at 0.8 + (j - 1) / 94.9 and needs 10 ms.
    later = 0.8 + 433 / (2 * 94.9) + 0.01
    expected = (66 * 0.1 + 434 * later) / 500
    assert expected == pytest.approx(2.6965, rel=1e-4)
    assert burst_ttft_seconds(500, 66, 0.1, 0.8, 94.9, 0.01) == pytest.approx(expected)
    assert burst_ttft_seconds(60, 66, 0.1, 0.8, 94.9, 0.01) == 0.1  # all fit: the wave


def test_a_front_end_bound_replica_serves_at_the_cap_and_queues_the_rest() -> None:
    capped = estimate_serving(500, 1024, 512, 128, _costs(FRONTEND_S))
    assert capped.running_batch == 124 and capped.queued == 376
    assert capped.aggregate_tokens_per_s == pytest.approx(1.0 / FRONTEND_S)
    assert capped.bound == "front end (API server)"
    assert "12853 tokens/s" in capped.reason
    # each user sees about B / cap a token: 124 x 77.8 us = 9.65 ms (the step at 124: 9.64 ms)
    assert capped.tpot_s == pytest.approx(124 * FRONTEND_S, rel=0.01)
    # the burst: 376 wait for the first cohort (1.27 s) and then 375 / 2 completions of
    # 1 / 100.4 s; about (N - B) / (2 R) + the cohort's life, far below the closed loop's queue
    assert capped.ttft_burst_s == pytest.approx(2.382, rel=2e-3)
    assert capped.ttft_burst_s < capped.ttft_wave_s
    free = estimate_serving(500, 1024, 512, 128, _costs(0.0))
    assert free.running_batch == 500 and free.queued == 0
    assert free.aggregate_tokens_per_s > capped.aggregate_tokens_per_s
    assert free.ttft_burst_s == pytest.approx(free.ttft_wave_s)  # all admitted: the wave


def test_a_one_shot_burst_is_scored_with_its_burst_ttft() -> None:
    capped = estimate_serving(500, 1024, 512, 128, _costs(FRONTEND_S))
    burst = benchmark_ttft_seconds(capped, 1.0, 500, "mean")
    assert burst == pytest.approx(capped.ttft_burst_s)
    # more prompts than clients: the first 500 of 2000 are the burst, the later waves of the
    # closed loop keep the queue wait
    later = benchmark_ttft_seconds(capped, 1.0, 2000, "mean")
    assert later == pytest.approx(0.25 * capped.ttft_burst_s + 0.75 * capped.ttft_wave_s)


@pytest.mark.parametrize("on", ["h100-sxm", "b200"])
def test_a_tiny_model_on_a_fast_gpu_is_capped_by_the_api_server_whatever_the_gpu(on: str) -> None:
    plan = plan_inference(
        model="qwen2.5-0.5b", on=on, quant="BF16", engine="vllm", prompt=128, gen=512,
        concurrency=1024, levers=False,
    )  # fmt: skip
    serving = plan.serving
    assert serving is not None
    assert serving.bound == "front end (API server)"
    assert serving.aggregate_tokens_per_s == pytest.approx(1e6 / 77.8)
    assert serving.running_batch < 100 and serving.queued > 900


def test_the_search_never_serves_a_replica_beyond_its_api_server() -> None:
    found = search_serving_layouts(
        model="qwen2.5-0.5b", on="h100-sxm", quant="BF16", engine="vllm", prompt=128, gen=512
    )
    best = found.best_aggregated
    assert best is not None
    assert max(r["tokens_per_s_per_gpu"] for r in found.rows) == pytest.approx(1e6 / 77.8)
    assert best["tokens_per_s_per_gpu"] == pytest.approx(1e6 / 77.8)
