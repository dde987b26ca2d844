"""Catalog rows added for issue 13 (what people serve on today): each loads, resolves by the
names people type, carries its source, and each new model's parameter count matches its
published total within 2 %."""

from __future__ import annotations

import pytest

from rigwise.hardware import get_accelerator
from rigwise.models import load_model
from rigwise.models.catalog import catalog_entries

NEW_DEVICES = {
    # typed name -> catalog id
    "RTX 4070": "rtx-4070",
    "NVIDIA GeForce RTX 4070": "rtx-4070",
    "RX 7900 XT": "rx-7900-xt",
    "AMD Radeon RX 7900 XT": "rx-7900-xt",
}

# name -> published total, from each JSON's own
# params_published, repeated here so a silently edited data file fails this test.
NEW_MODELS = {
    "tinyllama-1.1b": 1.1e9,
    "mistral-7b-v0.3": 7.25e9,
    "codellama-34b": 34e9,
    "falcon-7b": 7e9,
    "gemma-2-2b": 2.6e9,
}


@pytest.mark.parametrize(("typed", "catalog_id"), sorted(NEW_DEVICES.items()))
def test_new_device_resolves_and_is_sourced(typed: str, catalog_id: str) -> None:
    device = get_accelerator(typed)
    assert device.id == catalog_id
    assert device.source and device.retrieved
    assert device.memory_bytes > 0 and device.memory_bandwidth_bytes_per_s > 0


def test_new_devices_do_not_take_their_neighbours_names() -> None:
    assert get_accelerator("RTX 4070 Ti").id == "rtx-4070-ti"
    assert get_accelerator("RX 7900 XTX").id == "rx-7900-xtx"


def test_rtx_4070_tensor_rates_scale_with_sms_and_clock_from_the_4070_ti() -> None:
    """Same AD104 per-SM rates: 46 SMs x 2475 MHz against 60 SMs x 2610 MHz."""
    small, big = get_accelerator("rtx-4070"), get_accelerator("rtx-4070-ti")
    ratio = (46 * 2475) / (60 * 2610)
    for dtype in ("fp16", "bf16", "fp8", "int8"):
        assert small.flops[dtype] == pytest.approx(big.flops[dtype] * ratio, rel=0.005)


@pytest.mark.parametrize(("name", "published"), sorted(NEW_MODELS.items()))
def test_new_model_matches_published_total_within_two_percent(name: str, published: float) -> None:
    entry = catalog_entries()[name]
    assert entry.params_published["total"] == published
    assert entry.params_published["source"]
    spec = load_model(name)
    assert abs(spec.params_total - published) <= 0.02 * published


def test_new_models_resolve_by_alias() -> None:
    assert load_model("tinyllama").params_total == load_model("tinyllama-1.1b").params_total
    assert load_model("codellama 34b").params_total == load_model("codellama-34b").params_total
