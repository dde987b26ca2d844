"""Every numeric prediction of `infer`, `train` and `build` carries its P10-P90 range."""

from __future__ import annotations

import pytest

from rigwise.api.infer import plan_inference
from rigwise.api.train import plan_training
from rigwise.estimate.plan_intervals import phase_range, plan_regime
from rigwise.serialize import to_jsonable


def _ordered(bounds: list[float]) -> bool:
    return len(bounds) == 2 and 0 < bounds[0] < bounds[1]


def test_an_inference_plan_has_a_range_next_to_each_value() -> None:
    data = to_jsonable(plan_inference(model="llama-3.1-8b", on="rtx-4090", levers=False))
    for section, name in (
        ("decode", "tokens_per_s"),
        ("decode", "seconds_per_token"),
        ("prefill", "tokens_per_s"),
        ("prefill", "seconds"),
        ("serving", "aggregate_tokens_per_s"),
        ("serving", "ttft_s"),
        ("memory", "total_bytes"),
    ):
        assert _ordered(data[section][f"{name}_interval"]), (section, name)
    assert _ordered(data["ttft_s_interval"])
    decode = data["intervals"]["decode"]
    assert decode["basis"].startswith("decode|llama.cpp|nvidia-gddr") and not decode["widened"]
    low, high = data["decode"]["tokens_per_s_interval"]
    per_token_low, per_token_high = data["decode"]["seconds_per_token_interval"]
    assert per_token_low * high == pytest.approx(per_token_high * low)  # the same range, inverted


def test_a_case_unlike_any_validated_row_is_widened_and_says_why() -> None:
    data = to_jsonable(
        plan_inference(
            model="llama-3.1-70b", on="8x mi300x", engine="vllm", concurrency=64, levers=False
        )
    )
    serving = data["intervals"]["serving"]
    # vLLM serving rows exist for NVIDIA GDDR and HBM cards only: an MI300X plan is unlike them
    assert serving["widened"] and "device_class amd-hbm" in serving["notes"][0]
    assert _ordered(data["serving"]["aggregate_tokens_per_s_interval"])


def test_a_training_plan_has_ranges_on_step_speed_memory_and_time() -> None:
    data = to_jsonable(
        plan_training(model="llama-3.1-8b", on="8x h100-sxm", zero=3, global_batch=8, tokens="1B")
    )
    assert _ordered(data["step"]["seconds_interval"])
    assert _ordered(data["tokens_per_s_interval"])
    assert _ordered(data["memory_per_gpu"]["total_bytes_interval"])
    assert _ordered(data["time_to_train_s_interval"])
    low, high = data["tokens_per_s_interval"]
    time_low, time_high = data["time_to_train_s_interval"]
    assert time_low * high == pytest.approx(time_high * low)


def test_the_designer_carries_the_ranges() -> None:
    from rigwise.design.planner import rigwise_planner

    estimate = rigwise_planner()(
        task="infer", model="llama-3.1-8b", on="rtx-4090", nodes=1, network=None, engine=None,
        quant=None, split=None, concurrency=1, tokens=None,
    )  # fmt: skip
    assert estimate.decode_tokens_per_s_interval is not None
    assert _ordered(estimate.decode_tokens_per_s_interval)


def test_a_range_wholly_above_the_estimate_says_so_and_the_estimate_is_kept() -> None:
    from rigwise.estimate.intervals import Interval
    from rigwise.estimate.plan_intervals import interval_text

    faster = Interval(1.03, 1.24, "decode|llama.cpp|nvidia-gddr|quantized|2-8", "b", 32, False)
    assert faster.bias == "faster" and "ran faster" in faster.to_dict()["interval_note"]
    assert faster.rate(16.4)[0] > 16.4  # the range excludes the estimate; the estimate stays
    assert interval_text(faster.rate(16.4), value=16.4) == " (16.9-20.3: similar rigs ran faster)"
    # a time: the same faster rows give a range below the estimate
    assert interval_text(faster.time(2.0), "{:.2f}", 2.0, time=True).endswith("ran faster)")
    both = Interval(0.9, 1.2, "prefill|llama.cpp|*|*|*", "b", 89, False)
    assert both.bias is None and both.to_dict()["interval_note"] is None
    assert interval_text(both.rate(10.0), value=10.0) == " (9.0-12.0)"
    memory = Interval(1.05, 1.3, "train_memory|training|h100|16-bit|2-8", "b", 21, False)
    assert memory.bias == "more" and "more memory" in memory.to_dict()["interval_note"]
    slower = Interval(0.5, 0.9, "serving|tensorrt-llm|nvidia-hbm|fp4|2-8", "b", 20, False)
    assert slower.bias == "slower" and interval_text(slower.rate(10.0), value=10.0).endswith(
        "ran slower)"
    )


def test_ttft_takes_its_own_range_where_ttft_rows_exist_and_prefill_elsewhere() -> None:
    vllm = to_jsonable(
        plan_inference(
            model="llama-3.1-8b", on="rtx-4090", engine="vllm", quant="BF16", concurrency=8,
            levers=False,
        )
    )  # fmt: skip
    # vLLM on GeForce has measured TTFTs (the rows `validate intervals` scores TTFT with)
    assert vllm["intervals"]["ttft"]["basis"].startswith("ttft|vllm|nvidia-gddr")
    low, high = vllm["serving"]["ttft_s_interval"]
    assert _ordered([low, high]) and low < vllm["serving"]["ttft_s"] < high
    llama = to_jsonable(plan_inference(model="llama-3.1-8b", on="rtx-4090", levers=False))
    # no llama.cpp TTFT rows: a vLLM TTFT range would be another engine's queueing
    assert llama["intervals"]["ttft"]["basis"] == llama["intervals"]["prefill"]["basis"]
    scale = llama["ttft_s"] / llama["prefill"]["seconds"]
    expected = [b * scale for b in llama["prefill"]["seconds_interval"]]
    assert llama["ttft_s_interval"] == pytest.approx(expected)


# The ranges read from a plan object (levers, `rigwise fit`) are the ones its JSON carries.
@pytest.mark.parametrize(
    ("model", "on"),
    [
        ("llama-3.1-8b", "rtx-4090"),
        ("llama-3.1-8b", "rtx-3090+rtx-3060"),  # a mixed rig
        ("qwen2.5-7b", "2x rtx-3090"),
        ("llama-3.1-8b", "m3-max-40c-128gb"),
    ],
)
def test_phase_range_is_the_json_interval(model: str, on: str) -> None:
    plan = plan_inference(model=model, on=on, levers=False)
    data = to_jsonable(plan)
    assert plan.fits
    for phase in ("decode", "prefill"):
        assert phase_range(plan, phase) == data[phase]["tokens_per_s_interval"]
    found = plan_regime(plan, "decode")
    assert found is not None
    assert found[0].key() == data["intervals"]["decode"]["regime"]


def test_a_plan_that_does_not_fit_has_no_range() -> None:
    plan = plan_inference(model="llama-3.1-405b", on="rtx-4090", levers=False)
    assert not plan.fits
    assert phase_range(plan, "decode") is None
    assert phase_range(plan, "prefill") is None


def test_reloaded_widths_empty_the_ranges_kept_per_setup() -> None:
    """Plans memoise their ranges per (engine, devices, quant); a rewritten widening file
    (``validate intervals --write``) must not leave the old ranges in use."""
    from rigwise.estimate import plan_intervals
    from rigwise.estimate.intervals import reload_widening

    plan_intervals._ranges("llama.cpp", "nvidia-gddr", "Q4_K_M", 1, False)
    assert plan_intervals._ranges.cache_info().currsize > 0
    reload_widening()
    assert plan_intervals._ranges.cache_info().currsize == 0
    assert plan_intervals._memory_interval.cache_info().currsize == 0
