"""Whole-tile decode GEMMs of an older build (estimate/gemm_tiles.py): vLLM's SM120 FP8 W8A8
kernel ran one 256x128x64 CUTLASS tile at every batch size until PR #34424."""

from __future__ import annotations

from dataclasses import replace

import pytest
from tests.estimate.test_inference_physics import context, stage

from rigwise.estimate.engine_builds import build_effects
from rigwise.estimate.gemm_tiles import TileFloor, dense_gemms, sm_count, tile_floor_seconds
from rigwise.estimate.inference import decode_stage_parts
from rigwise.hardware import get_accelerator
from rigwise.models.catalog import load_catalog_model

# vllm-project/vllm PR #37970 (SM120 CUTLASS block-FP8 GEMM, m x n=5120 x k=16384): 187 us at
# m = 16, 32 and 48 with the 128x128x128 tile, 97 us with the 64x128x128 tile that replaced it.
PR37970_128_ROWS_S = 187e-6
PR37970_64_ROWS_S = 97e-6
RTX_5090_FP8 = 419e12  # accelerators.csv: whitepaper FP8 with FP32 accumulate, 170 SMs


def _published_shape(tile_m: int) -> TileFloor:
    sms = sm_count("rtx-5090")
    assert sms == 170
    return TileFloor(tile_m, 128, sms, RTX_5090_FP8 / sms, 1.0, ((5120, 16384, 1.0),))


def test_a_tile_costs_the_same_at_every_batch_below_its_rows() -> None:
    """The published kernel took 187 us at m = 16, 32 and 48 alike, and 97 us with half the
    rows: the time follows the tile, not the batch. One wave of 40 CTAs, each 2 x 128 x 128 x
    16384 FLOPs at one SM's share of the 5090's FP8 peak: 218 us (the GPU's clock above the
    2407 MHz the peak assumes gives the measured 187 us); a 64-row tile: 109 us (97 us)."""
    big, small = _published_shape(128), _published_shape(64)
    times = [tile_floor_seconds(big, m, 1.792e12) for m in (16, 32, 48)]
    one_cta = 2 * 128 * 128 * 16384 / (419e12 / 170)
    assert times[0] == times[1] == times[2] == pytest.approx(one_cta)
    assert times[0] == pytest.approx(PR37970_128_ROWS_S, rel=0.2)
    assert tile_floor_seconds(small, 16, 1.792e12) == pytest.approx(PR37970_64_ROWS_S, rel=0.2)
    assert tile_floor_seconds(big, 16, 1.792e12) / tile_floor_seconds(small, 16, 1.792e12) == 2
    # a second row of tiles runs beside the first (80 CTAs, one wave); 5 rows (200 CTAs) take two
    assert tile_floor_seconds(big, 129, 1.792e12) == times[0]
    assert tile_floor_seconds(big, 513, 1.792e12) == 2 * times[0]


def test_only_vllm_fp8_builds_before_pr_34424_on_sm120_run_one_tile() -> None:
    assert build_effects("vllm", "nvidia-gddr", "fp8", "2025-10-16", 12.0).decode_gemm_tile == (
        256,
        128,
    )
    assert build_effects("vllm", "nvidia-gddr", "fp8", "2026-03", 12.0).decode_gemm_tile is None
    assert build_effects("vllm", "nvidia-hbm", "fp8", "2025-10", 9.0).decode_gemm_tile is None
    assert build_effects("vllm", "nvidia-gddr", "awq", "2025-10", 12.0).decode_gemm_tile is None
    assert build_effects("vllm", "nvidia-gddr", "fp8", None, 12.0).decode_gemm_tile is None


def test_glm_46_dense_gemms_per_device_at_tp8() -> None:
    """GLM-4.6: 92 layers (3 dense), hidden 5120, 96 heads and 8 KV heads of 128, dense MLP
    12288, one shared expert of 1536: per device at TP 8, qkv 1792 x 5120, o 5120 x 1536,
    dense gate-up 3072 x 5120 and down 5120 x 1536, shared gate-up 384 x 5120, down 5120 x 192."""
    spec = load_catalog_model("glm-4.6")
    device = stage(get_accelerator("rtx-pro-6000-blackwell"), tp=8)
    assert dense_gemms(spec, device) == (
        (1792, 5120, 92.0),
        (5120, 1536, 92.0),
        (3072, 5120, 3.0),
        (5120, 1536, 3.0),
        (384, 5120, 89.0),
        (5120, 192, 89.0),
    )


def test_an_old_build_adds_the_whole_tiles_to_the_decode_step() -> None:
    """At one token every GEMM above is one wave of 256 x 128 tiles (at most 40 CTAs on 188
    SMs): sum of layers x 2 x 256 x 128 x K / (1000 TFLOP/s / 188), each far above its bytes
    at the reached bandwidth; the step pays it beyond the dense GEMMs' own roofline."""
    spec = load_catalog_model("glm-4.6")
    device = stage(get_accelerator("rtx-pro-6000-blackwell"), tp=8)
    ctx = context(spec, quant="FP8", engine="vllm")
    current = decode_stage_parts(ctx, device, context=1000, batch=1)
    old = decode_stage_parts(replace(ctx, engine_build="2025-10-16"), device, 1000, 1)
    per_sm = 1000e12 / 188
    k_sum = 92 * (5120 + 1536) + 3 * (5120 + 1536) + 89 * (5120 + 192)
    floor = k_sum * 2 * 256 * 128 / per_sm
    added = old["gemm_tiles"]
    assert floor == pytest.approx(13.6e-3, rel=0.01)
    # the dense GEMMs' bytes (part of memory_bandwidth) were already paid: the rest is added
    assert floor - current["memory_bandwidth"] < added < floor
    assert {k: v for k, v in old.items() if k != "gemm_tiles"} == current


def test_the_weights_outside_the_tiles_are_still_read() -> None:
    """The tile floor covers the dense GEMMs it lists; the output head (16-bit) and, with MLA,
    the attention weights are still read beside them. The step subtracted the roofline of
    every dense weight from the floor, so a larger head cost nothing on an older build: GLM-4.6
    with a second output head took as long as with one (llama-3.1-8b FP8 on an RTX 5090:
    1.3 ms of its head and embedding vanished from a 27.6 ms step)."""
    device = stage(get_accelerator("rtx-pro-6000-blackwell"), tp=8)
    spec = load_catalog_model("glm-4.6")

    def step(extra_bytes: float, build: str | None) -> float:
        """memory + tiles with ``extra_bytes`` more dense weights outside the tiles (a head)."""
        ctx = context(spec, quant="FP8", engine="vllm")
        ctx = replace(ctx, weights_bytes=ctx.weights_bytes + extra_bytes, engine_build=build)
        parts = decode_stage_parts(ctx, device, 1000, 1)
        return parts["memory_bandwidth"] + parts.get("gemm_tiles", 0.0)

    head = 2 * spec.vocab_size * spec.hidden_size  # a second 16-bit head's bytes
    now = step(head, None) - step(0.0, None)
    assert now > 0
    assert step(head, "2025-10-16") - step(0.0, "2025-10-16") == pytest.approx(now, rel=1e-6)


# vllm-project/vllm PR #34424's bench_fp8_gemm.py results without the patch (RTX 5090, the one
# 256x128x64 config, per-channel cutlass_scaled_mm, N=6144 K=4096): 49 us at every M from 1 to 256
PR34424_BEFORE_S = 49e-6


def test_the_per_channel_tile_runs_at_its_measured_rate_not_the_peaks_share() -> None:
    """One wave of 48 CTAs of 256x128 at the rate engine_builds.csv gives one SM on that tile
    (from the same measurement): 49 us. The dense peak's share (419 TFLOPS / 170 SMs, the 5090's
    FP8 rate with FP32 accumulation) priced it at 109 us, 2.2x the kernel's own time."""
    effects = build_effects("vllm", "nvidia-gddr", "fp8", "2025-10-16", 12.0)
    assert effects.decode_gemm_tile_sm_flops is not None
    floor = TileFloor(256, 128, 170, effects.decode_gemm_tile_sm_flops, 1.0, ((6144, 4096, 1.0),))
    for m in (1, 16, 256):
        assert tile_floor_seconds(floor, m, 1.792e12) == pytest.approx(PR34424_BEFORE_S, rel=0.01)
    peak_share = replace(floor, sm_flops=RTX_5090_FP8 / 170)
    assert tile_floor_seconds(peak_share, 1, 1.792e12) == pytest.approx(109e-6, rel=0.01)
    # the current build has no tile, and so no rate
    assert build_effects("vllm", "nvidia-gddr", "fp8", None, 12.0).decode_gemm_tile_sm_flops is None
