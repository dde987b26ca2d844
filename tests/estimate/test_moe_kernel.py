"""The fused MoE block of vLLM / SGLang in decode: expert weights streamed at the dense decode
efficiency plus a GPU-side cost per MoE layer and per touched expert
(``moe_kernel_overheads.csv``), checked against the published kernel microbenchmarks it was
fitted on and against its own formula."""

from __future__ import annotations

import numpy as np
import pytest

from rigwise.api.infer import plan_inference
from rigwise.estimate.engine_builds import build_effects
from rigwise.estimate.inference_efficiency import catalog_efficiency
from rigwise.estimate.inference_moe import moe_kernel, moe_kernel_seconds, partly_overlapped
from rigwise.estimate.inference_stages import Stage
from rigwise.hardware import get_accelerator
from rigwise.models import load_model


def _stage(gpu: str, tp: int = 1, ep: int = 1, layer_fraction: float = 1.0) -> Stage:
    return Stage(0, 0, get_accelerator(gpu), tp, layer_fraction, None, None, None, ep=ep)


# (model, GPU, tp, bytes per weight, batch, published kernel time in us): benchmark_moe.py
# fused_experts under CUDA-graph replay. vllm-project/vllm PR #24700 (Mixtral BF16 -tp 2
# tuned; Qwen3-30B-A3B fp8_w8a8 -tp 1 '# Main') and sgl-project/sglang PR #11730 (Qwen3-235B
# fp8_w8a8 --tp-size 8 on H200, without the tuned config).
PUBLISHED = [
    ("mixtral-8x7b", "h100-sxm", 2, 2, 1, 144.03),
    ("mixtral-8x7b", "h100-sxm", 2, 2, 32, 487.35),
    ("mixtral-8x7b", "h100-sxm", 2, 2, 128, 491.39),
    ("qwen3-30b-a3b", "h100-sxm", 1, 1, 8, 129.77),
    ("qwen3-30b-a3b", "h100-sxm", 1, 1, 32, 238.37),
    ("qwen3-30b-a3b", "h100-sxm", 1, 1, 128, 273.72),
    ("qwen3-235b-a22b", "h200-sxm", 8, 1, 8, 66.87),
    ("qwen3-235b-a22b", "h200-sxm", 8, 1, 32, 124.99),
]


@pytest.mark.parametrize(("model", "gpu", "tp", "width", "batch", "published_us"), PUBLISHED)
def test_the_moe_block_reproduces_the_published_microbenchmarks(
    model: str, gpu: str, tp: int, width: int, batch: int, published_us: float
) -> None:
    """One layer's fused_experts: touched experts E(1-(1-k/E)^B) x their bytes on the device
    (gate, up and down, a 1/tp slice each) over the bandwidth at vLLM's dense decode efficiency,
    plus the table's per-layer and per-expert cost. These are the rows the table was fitted on
    (least squares, 11 points): within 10 % here, and no fit would pass with a = b = 0."""
    spec = load_model(model)
    moe = spec.moe
    assert moe is not None
    stage = _stage(gpu, tp)
    touched = 1 - (1 - moe.experts_per_token / moe.num_experts) ** batch
    expert_bytes = 3 * spec.hidden_size * moe.expert_intermediate_size / tp * width
    eff = catalog_efficiency("vllm", "nvidia-hbm", "bf16").decode_bandwidth_efficiency
    stream_s = (
        moe.num_experts
        * touched
        * expert_bytes
        / (stage.accelerator.memory_bandwidth_bytes_per_s * eff)
    )
    layers = moe.num_moe_layers or spec.num_layers
    block_s = stream_s + moe_kernel_seconds(spec, "vllm", stage, touched) / layers
    assert block_s * 1e6 == pytest.approx(published_us, rel=0.10)
    assert stream_s * 1e6 < 0.97 * published_us  # bandwidth alone is short of every row


def test_the_cost_follows_its_formula() -> None:
    """Qwen3-30B-A3B (48 MoE layers, 128 experts, top 8) on an H100 at batch 1: 8 experts
    touched, 48 x (19.3 + 0.40 x 8) us; expert parallel 4 holds 32 experts a device; an RTX
    PRO 6000 (2,617 MHz boost) pays 1,980 / 2,617 of it (GPU cycles); a stage of a quarter of
    the layers a quarter."""
    spec = load_model("qwen3-30b-a3b")
    kernel = moe_kernel("vllm", "nvidia-hbm")
    assert (kernel.layer_s, kernel.expert_s) == pytest.approx((19.3e-6, 0.40e-6))
    one = moe_kernel_seconds(spec, "vllm", _stage("h100-sxm"), 8 / 128)
    assert one == pytest.approx(48 * (19.3 + 0.40 * 8) * 1e-6)
    all_experts = moe_kernel_seconds(spec, "vllm", _stage("h100-sxm", tp=4, ep=4), 1.0)
    assert all_experts == pytest.approx(48 * (19.3 + 0.40 * 32) * 1e-6)
    pro = moe_kernel_seconds(spec, "vllm", _stage("rtx-pro-6000-blackwell"), 8 / 128)
    assert pro == pytest.approx(one * 1980 / 2617)
    quarter = moe_kernel_seconds(spec, "sglang", _stage("h100-sxm", layer_fraction=0.25), 8 / 128)
    assert quarter == pytest.approx(one / 4)


def test_dense_models_and_other_engines_pay_nothing() -> None:
    """Dense models have no MoE block; TensorRT-LLM and llama.cpp keep their MoE cost where it
    was fitted (moe_expert_efficiency, the per-layer overhead)."""
    stage = _stage("h100-sxm")
    assert moe_kernel_seconds(load_model("llama-3.1-8b"), "vllm", stage, 0.0) == 0.0
    qwen = load_model("qwen3-30b-a3b")
    for engine in ("tensorrt-llm", "llama.cpp"):
        assert moe_kernel_seconds(qwen, engine, stage, 1.0) == 0.0
        assert moe_kernel(engine, "nvidia-hbm").gemm_efficiency == 0.0
    assert catalog_efficiency("vllm", "nvidia-hbm", "bf16").moe_expert_efficiency == 1.0
    assert catalog_efficiency("tensorrt-llm", "nvidia-hbm", "fp8").moe_expert_efficiency == 0.38


def test_the_grouped_gemm_reach_is_the_published_large_batch_slope() -> None:
    """vllm-project/vllm PR #24700, Qwen3-30B-A3B fp8_w8a8 -tp 1 on H100 ('# Main'): batch
    2048 911.64 us, 4096 1647.57 us, every expert touched at both, so the difference is the
    GEMM work of 2048 x 8 more (token, expert) pairs of 2 x 3 x 2048 x 768 FLOPs, done at
    0.106 of the H100's FP8 peak."""
    flops = 2048 * 8 * 2 * 3 * 2048 * 768
    reached = flops / ((1647.57 - 911.64) * 1e-6)
    peak = get_accelerator("h100-sxm").flops["fp8"]
    assert moe_kernel("vllm", "nvidia-gddr").gemm_efficiency == pytest.approx(
        reached / peak, rel=0.01
    )


# vllm-project/vllm PR #24700, Qwen3-30B-A3B fp8_w8a8 -tp 1 on H100, '# Main' (the default config
# of vLLM's Triton fused_moe before PR #34846: num_warps / num_stages not set): batch -> us
MAIN = {1: 44.54, 2: 59.94, 4: 90.46, 8: 129.77, 16: 185.40, 24: 215.99, 32: 238.37, 48: 257.83,
        64: 262.73, 96: 270.98, 128: 273.72, 256: 355.49, 512: 391.86, 1024: 536.33,
        1536: 727.31, 2048: 911.64, 3072: 1279.17, 4096: 1647.57}  # fmt: skip


def _main_terms(batch: int) -> tuple[float, float, float]:
    """(bytes s, FLOPs s, fixed s) of one fused_experts call of the table's shape, as the
    planner prices it: touched experts' FP8 weights at vLLM's decode bandwidth efficiency, the
    (token, expert) pairs' 2 x 3 x 2048 x 768 FLOPs at the grouped-GEMM reach, and the
    moe_kernel_overheads.csv per-layer and per-expert cost."""
    h100 = get_accelerator("h100-sxm")
    kernel = moe_kernel("vllm", "nvidia-hbm")
    eff = catalog_efficiency("vllm", "nvidia-hbm", "fp8").decode_bandwidth_efficiency
    touched = 128 * (1 - (1 - 8 / 128) ** batch)
    moved = touched * 3 * 2048 * 768 / (h100.memory_bandwidth_bytes_per_s * eff)
    worked = batch * 8 * 2 * 3 * 2048 * 768 / (h100.flops["fp8"] * kernel.gemm_efficiency)
    return moved, worked, kernel.layer_s + kernel.expert_s * touched


def test_the_old_default_config_overlap_is_the_fit_of_its_whole_table() -> None:
    """The max(bytes, FLOPs) form of the table's fit points reads -23 % to -30 % at batch
    256-512 of the same '# Main' table; engine_builds.csv decode_moe_unoverlapped is the least
    squares share of min(bytes, FLOPs) over all 18 points (0.545), which brings every point
    from 256 up within 10 %."""
    share = build_effects("vllm", "nvidia-hbm", "bf16", "2025-10-15", 9.0).moe_unoverlapped
    num = den = 0.0
    for batch, us in MAIN.items():
        moved, worked, fixed = _main_terms(batch)
        shorter = min(moved, worked) / (us * 1e-6)
        num += shorter * (us * 1e-6 - max(moved, worked) - fixed) / (us * 1e-6)
        den += shorter * shorter
    assert share == pytest.approx(num / den, abs=0.01)
    for batch in (256, 512, 1024, 2048, 4096):
        moved, worked, fixed = _main_terms(batch)
        slow = partly_overlapped(moved, worked, share)
        assert (max(slow) + fixed) * 1e6 == pytest.approx(MAIN[batch], rel=0.10)
    moved, worked, fixed = _main_terms(512)
    assert (max(moved, worked) + fixed) * 1e6 < 0.75 * MAIN[512]  # without it


def test_the_overlap_is_the_old_triton_kernels_only() -> None:
    """Builds from PR #34846 (2026-02-18) on set num_warps / num_stages; AWQ / GPTQ MoE run the
    Marlin kernel; FP8 MoE on Hopper and datacenter Blackwell takes CUTLASS, on SM120 Triton."""

    def share(quant: str, build: str | None, capability: float) -> float:
        return build_effects("vllm", "nvidia-hbm", quant, build, capability).moe_unoverlapped

    assert share("bf16", "2025-10-15", 9.0) == share("fp8", "2025-10-15", 12.0) == 0.55
    assert share("bf16", "2026-03", 9.0) == share("bf16", None, 9.0) == 0.0
    assert share("awq-4bit-g128", "2025-10-15", 9.0) == share("fp8", "2025-10-15", 9.0) == 0.0
    assert build_effects("sglang", "nvidia-hbm", "bf16", "2025-10-15", 9.0).moe_unoverlapped == 0


def test_the_longer_side_takes_the_share_of_the_shorter() -> None:
    assert partly_overlapped(3.0, 1.0, 0.5) == (3.5, 1.0)
    assert partly_overlapped(1.0, 3.0, 0.5) == (1.0, 3.5)
    assert partly_overlapped(1.0, 3.0, 0.0) == (1.0, 3.0)
    moved, worked = partly_overlapped(np.array([3.0, 1.0]), np.array([1.0, 3.0]), 0.5)
    assert list(moved) == [3.5, 1.0] and list(worked) == [1.0, 3.5]


def test_an_old_build_slows_the_serving_step_not_one_token() -> None:
    """GLM-4.6 BF16 on 8 H200 (E=160, N=192 per device: no tuned config in vLLM for BF16): a
    2025-10 build's running batch of 512 steps longer than a current one; batch-1 decode (no
    grouped-GEMM roofline) is the same."""
    kwargs = dict(model="glm-4.6", on="8x h200-sxm", quant="BF16", engine="vllm", tp=8,
                  prompt=1000, gen=1000, concurrency=512, max_batch=512, levers=False)  # fmt: skip
    old = plan_inference(**kwargs, engine_build="2025-10-15")
    new = plan_inference(**kwargs, engine_build="2026-03-01")
    assert old.serving and new.serving and old.decode and new.decode
    assert old.serving.step_seconds > 1.1 * new.serving.step_seconds
    assert old.decode.tokens_per_s == new.decode.tokens_per_s


def test_ada_fp8_moe_runs_the_same_old_triton_kernel() -> None:
    """compressed_tensors_moe.py takes Marlin below SM89 and CUTLASS on exactly SM90 / SM100:
    Ada's FP8 MoE (SM89, all GDDR parts) ran Triton fused_experts as SM120 did."""

    def share(klass: str, capability: float) -> float:
        return build_effects("vllm", klass, "fp8", "2025-10-15", capability).moe_unoverlapped

    assert share("nvidia-gddr", 8.9) == share("nvidia-gddr", 12.0) == 0.55
    assert share("nvidia-gddr", 8.6) == share("nvidia-hbm", 9.0) == share("nvidia-hbm", 10.0) == 0
