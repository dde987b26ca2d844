"""Serving arithmetic (continuous batching) and the levers' ranking, with stand-in functions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from rigwise.api.infer import InferOptions
from rigwise.api.levers import suggest_levers
from rigwise.errors import InputError
from rigwise.estimate.serving import Costs, estimate_serving


def _serve(concurrency: int, most: int = 64, step: float = 0.02, replicas: int = 1) -> Any:
    costs = Costs(
        step_seconds=lambda batch: step + 0.001 * batch,
        prefill_seconds_per_token=1e-5,
        single_prefill_seconds=0.05,
        compute_bound_at=lambda batch: batch > 32,
        chunk_tokens=8192,
    )
    return estimate_serving(concurrency, most, 1000, 100, costs, replicas, gpus_per_replica=2)


def test_one_request_cycle_is_prefill_plus_gen_steps() -> None:
    result = _serve(1)
    cycle = 1000 * 1e-5 + 100 * 0.021
    assert result.aggregate_tokens_per_s == pytest.approx(100 / cycle)
    assert result.tpot_s == pytest.approx(0.021)  # alone: one decode step per token
    assert result.ttft_wave_s == pytest.approx(0.05 + 0.021)  # own prefill + one step
    assert result.ttft_s == pytest.approx(0.05)  # closed loop of one: nothing runs, own prefill
    assert result.queued == 0 and result.queue_wait_s == 0.0


def test_batching_raises_the_total_and_lowers_each_users_rate() -> None:
    one, many = _serve(1), _serve(32)
    assert many.aggregate_tokens_per_s > 5 * one.aggregate_tokens_per_s
    assert many.per_user_tokens_per_s < one.per_user_tokens_per_s
    assert many.ttft_s > one.ttft_s


def test_concurrency_beyond_the_kv_cache_queues_with_a_reason() -> None:
    result = _serve(500, most=64)
    assert result.running_batch == 64 and result.queued == 436
    assert "436 wait" in result.reason
    assert result.bound == "compute"


def test_queueing_plateaus_throughput_and_grows_ttft_by_littles_law() -> None:
    """Past the running batch the total stays put and the wait is (N - B) x gen / total:
    Little's law (L = lambda W) with lambda = total / gen requests per second. Queued, slots
    free one by one and each request decodes through the other 63 prompts (serving_tpot)."""
    full, more = _serve(64), _serve(256)
    assert more.aggregate_tokens_per_s == pytest.approx(full.aggregate_tokens_per_s)
    assert more.tpot_s == pytest.approx(0.02 + 0.064 + 63 * 1000 * 1e-5 / 99)
    assert more.tpot_s > full.tpot_s  # the wave of 64 alone: half of them behind on average
    rate = more.aggregate_tokens_per_s / 100  # requests per second
    expected_in_system = 256 / rate
    service = more.ttft_s - more.queue_wait_s + 99 * more.tpot_s
    assert more.queue_wait_s == pytest.approx(expected_in_system - service)
    assert more.queue_wait_s > 100 * full.tpot_s


def test_replicas_multiply_the_total_and_split_the_queue() -> None:
    one, two = _serve(128, most=64), _serve(128, most=64, replicas=2)
    assert two.aggregate_tokens_per_s == pytest.approx(2 * _serve(64).aggregate_tokens_per_s)
    assert two.queued == 0 and one.queued == 64
    assert two.tokens_per_s_per_gpu == pytest.approx(two.aggregate_tokens_per_s / 4)


def test_no_room_for_a_single_request_is_a_result_not_an_error() -> None:
    result = _serve(4, most=0)
    assert result.aggregate_tokens_per_s == 0.0
    assert result.reason


@dataclass
class _Phase:
    tokens_per_s: float


@dataclass
class _Memory:
    total_bytes: float
    capacity_bytes: float
    weights_bytes: float
    per_device: tuple[Any, ...] = ()  # no devices: the levers carry no range


@dataclass
class _FakePlan:
    fits: bool
    verdict: str
    memory: _Memory
    decode: _Phase | None
    quant: str = "Q8_0"
    engine: str = "llama.cpp"
    kv_quant: str = "f16"
    reason: str = ""
    serving: Any = None
    device_kinds: tuple[str, ...] = ("gpu",)
    extra: dict[str, Any] = field(default_factory=dict)


def _fake_run(options: InferOptions) -> Any:
    """Q4_K_M halves the weights and fits; a second GPU fits at the same speed."""
    if options.on == "2x rtx-3090":
        return _FakePlan(True, "fits", _Memory(30e9, 48e9, 28e9), _Phase(15.0))
    if options.quant == "Q4_K_M":
        return _FakePlan(True, "fits", _Memory(20e9, 24e9, 18e9), _Phase(27.0), quant="Q4_K_M")
    if options.quant == "IQ2_XXS":
        raise InputError("unknown quant")  # a lever that cannot be planned is left out
    return _FakePlan(False, "does not fit", _Memory(36e9, 24e9, 34e9), None, reason="too big")


def test_levers_that_fix_the_fit_come_first_lossless_before_fewer_bits() -> None:
    """Both fix the fit; the second card keeps the model's quality, so it ranks before the
    faster Q4_K_M, which is marked as losing quality (api/levers.py ranking)."""
    options = InferOptions(model="m", on="rtx-3090", prompt=512, gen=128, quant="Q8_0")
    levers = suggest_levers(options, _fake_run(options), _fake_run)
    assert [lever.change for lever in levers[:2]] == [{"on": "2x rtx-3090"}, {"quant": "Q4_K_M"}]
    assert levers[1].description.startswith("Q4_K_M instead of Q8_0: fits")
    assert levers[1].quality_loss and not levers[0].quality_loss
    assert all(lever.fixes_fit for lever in levers[:2])
