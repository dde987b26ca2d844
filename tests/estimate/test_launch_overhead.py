"""Per-layer decode overhead in GPU cycles (``estimate.launch_overhead``): no fixed floor."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rigwise.api.infer import plan_inference
from rigwise.estimate.launch_overhead import boost_clock_hz, clock_scale, reference_clock_hz
from rigwise.hardware import get_accelerator


def _decode(on: str, engine: str = "llama.cpp") -> tuple[float, float]:
    plan = plan_inference(
        model="llama-2-7b", on=on, quant="Q4_0", prompt=1, gen=128, engine=engine, levers=False
    )
    return plan.decode.tokens_per_s, plan.decode.parts["kernel_overhead"]


def test_overhead_scales_with_the_boost_clock() -> None:
    # Same memory bandwidth (1792 GB/s), different clocks (2407 vs 2617 MHz): the faster clock
    # pays proportionally less per-layer overhead, so the two cards no longer share one cap.
    fast, fast_overhead = _decode("rtx-pro-6000-blackwell")
    slow, slow_overhead = _decode("rtx-5090")
    assert slow_overhead / fast_overhead == pytest.approx(2617 / 2407, rel=1e-9)
    assert fast > slow


def test_reference_clock_device_pays_the_catalog_value() -> None:
    # RTX 4090 (2520 MHz) is the llama.cpp reference: 32 layers x 45.0 us.
    _, overhead = _decode("rtx-4090")
    assert overhead == pytest.approx(32 * 45.0e-6, rel=1e-9)


def test_host_side_overhead_does_not_scale() -> None:
    # transformers dispatches from Python on the host: no reference clock, scale 1.
    assert reference_clock_hz("transformers", "nvidia-gddr") is None
    assert clock_scale("transformers", get_accelerator("rtx-5090")) == 1.0


def test_device_without_a_listed_clock_keeps_the_catalog_value() -> None:
    unlisted = replace(get_accelerator("rtx-4090"), id="made-up-gpu")
    assert boost_clock_hz("made-up-gpu") is None
    assert clock_scale("llama.cpp", unlisted) == 1.0


def test_rtx_4090_decode_against_the_cuda_scoreboard() -> None:
    # ggml-org/llama.cpp discussion #15013: LLaMA 2 7B Q4_0 tg128 on an RTX 4090, 186.21 tok/s
    # (a fit row of efficiency_inference.csv; the per-layer overhead was refitted on it).
    tokens_per_s, _ = _decode("rtx-4090")
    assert tokens_per_s == pytest.approx(186.21, rel=0.03)
