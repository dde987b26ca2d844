"""Catalog rows added for issue 13 (what people serve on today): each loads, resolves by the
names people type, carries its source, and each new model's parameter count matches its
published total within 2 %."""

from __future__ import annotations

import pytest

from rigwise.api.infer import plan_inference
from rigwise.hardware import get_accelerator, get_system
from rigwise.models import load_model
from rigwise.models.catalog import catalog_entries

NEW_DEVICES = {
    # typed name -> catalog id
    "RTX 4070": "rtx-4070",
    "NVIDIA GeForce RTX 4070": "rtx-4070",
    "RX 7900 XT": "rx-7900-xt",
    "AMD Radeon RX 7900 XT": "rx-7900-xt",
    # issue 13 item 4, second batch
    "A10G": "a10g",
    "RTX 2080 Ti": "rtx-2080-ti",
    "RTX 4070 Super": "rtx-4070-super",
    "RTX A4000": "rtx-a4000",
    "RTX A2000": "rtx-a2000-12gb",
    "RTX PRO 6000 Server Edition": "rtx-pro-6000-blackwell-server",
    "B300": "b300",
    "GB200": "gb200",
    "GB300": "gb300",
    "MI355X": "mi355x",
    "RX 9070 XT": "rx-9070-xt",
    "Radeon AI PRO R9700": "radeon-ai-pro-r9700",
    "Radeon PRO W7700": "radeon-pro-w7700",
    "Arc B580": "arc-b580",
    "Arc Pro B50": "arc-pro-b50",
    "Ryzen AI Max+ 395": "ryzen-ai-max-plus-395",
    "Strix Halo": "ryzen-ai-max-plus-395",
    "M5": "m5-10c-32gb",
    "M5 16GB": "m5-10c-16gb",
    "M5 Pro": "m5-pro-20c-64gb",
    "M5 Max": "m5-max-40c-128gb",
    "Raspberry Pi 5": "raspberry-pi-5-16gb",
}

# Every device row added for issue 13, planned with a small model: each must fit and decode.
SMALL_MODEL = "qwen2.5-0.5b"
NEW_IDS = sorted(set(NEW_DEVICES.values()) - {"rtx-4070", "rx-7900-xt"})

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
    assert get_accelerator("RTX 4070 Ti Super").id == "rtx-4070-ti-super"
    assert get_accelerator("RTX PRO 6000").id == "rtx-pro-6000-blackwell"
    assert get_accelerator("A10").id == "a10"
    assert get_accelerator("M4").id == "m4-10c-32gb"


@pytest.mark.parametrize("device_id", NEW_IDS)
def test_every_new_device_plans_a_small_model(device_id: str) -> None:
    plan = plan_inference(model=SMALL_MODEL, on=device_id, levers=False)
    assert plan.fits, plan.reason
    assert plan.decode is not None and plan.decode.tokens_per_s > 0


@pytest.mark.parametrize("system_id", ["gb200-nvl72", "gb300-nvl72"])
def test_nvl72_is_one_nvlink_domain_of_72_gpus(system_id: str) -> None:
    system = get_system(system_id)
    assert system.accelerator_count == 72 and system.intra_link_id == "nvswitch-gen4"
    gpu = get_accelerator(system.accelerator_id)
    # NVLink 5 Switch: every GPU keeps its full 900 GB/s per direction inside the rack.
    assert gpu.nvlink_bytes_per_s == pytest.approx(900e9)
    # Kimi K2 (1T parameters, FP8) on 9 replicas of tp8 inside the one NVLink domain.
    plan = plan_inference(model="kimi-k2", on=system_id, tp=8, dp=9, levers=False)
    assert plan.fits and plan.quant == "FP8"


def test_blackwell_ultra_trades_int8_for_fp4() -> None:
    """HGX B300 / GB300 NVL72 datasheets: FP4 1.5x Blackwell, INT8 cut to a few percent."""
    b200, b300 = get_accelerator("b200"), get_accelerator("b300")
    assert b300.flops["fp4"] == pytest.approx(1.5 * b200.flops["fp4"])
    assert b300.flops["bf16"] == b200.flops["bf16"]
    assert b300.flops["int8"] < 0.05 * b200.flops["int8"]


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
