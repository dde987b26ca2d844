"""Older engine builds (catalog/data/engine_builds.csv): the dequantize + fp16 GEMM prompt path of
llama.cpp CUDA before PR #8075 (2024-06-23) and the ggml-backend speed ratio of PR #4766."""

from __future__ import annotations

from dataclasses import replace

import pytest
from tests.estimate.test_inference_physics import context, dense_model, gpu, stage

from rigwise.errors import InputError
from rigwise.estimate.engine_builds import CURRENT, build_effects, normalise_build
from rigwise.estimate.inference import prefill_stage_parts
from rigwise.estimate.model_memo import flops_parts

# llama.cpp PR #4766, JohannesGaessler's RTX 3090 llama 7B runs, master vs ggml-backend (pp512)
Q4_0_RATIO = 3408.18 / 3510.53
F16_RATIO = 4184.85 / 4407.44


def test_a_build_before_pr_8075_dequantizes_quantized_prompts() -> None:
    old = build_effects("llama.cpp", "nvidia-gddr", "q4_k_m", "2024-05", 8.9)
    assert old.dequant_gemm and old.prefill_speed_scale == 1.0
    assert any("#8075" in s for s in old.sources)


def test_gpus_without_fp16_tensor_cores_kept_the_dp4a_kernels() -> None:
    """Before PR #8075 cuBLAS took quantized prompts only on compute capability 7.0+ (a P40,
    6.1, ran MMQ with dp4a); a device with no compute capability listed is not assumed to."""
    assert not build_effects("llama.cpp", "nvidia-gddr", "q4_0", "2024-05", 6.1).dequant_gemm
    assert not build_effects("llama.cpp", "nvidia-gddr", "q4_0", "2024-05", None).dequant_gemm
    assert build_effects("llama.cpp", "nvidia-gddr", "q4_0", "2024-05", 7.0).dequant_gemm


def test_a_build_before_pr_4766_runs_prompts_at_the_published_ratio() -> None:
    q4 = build_effects("llama.cpp", "nvidia-gddr", "q4_0", "2023-12", 8.6)
    f16 = build_effects("llama.cpp", "nvidia-hbm", "f16", "2023-12")
    assert q4.dequant_gemm and q4.prefill_speed_scale == pytest.approx(Q4_0_RATIO, abs=5e-4)
    assert not f16.dequant_gemm and f16.prefill_speed_scale == pytest.approx(F16_RATIO, abs=5e-4)


def test_current_and_later_builds_change_nothing() -> None:
    assert build_effects("llama.cpp", "nvidia-gddr", "q4_0", None) is CURRENT
    assert build_effects("llama.cpp", "nvidia-gddr", "q4_0", "2024-06-24") == CURRENT
    assert build_effects("llama.cpp", "apple-lpddr", "q4_0", "2023-12") == CURRENT  # CUDA only
    assert build_effects("vllm", "nvidia-hbm", "fp8", "2023-12") == CURRENT


@pytest.mark.parametrize(
    "bad",
    [
        "2023-13",
        "Dec 2023",
        "2023/12",
        "23-12",
        "2026-02-30",
        "2026-02-99",
        "2026-04-31",
        "0000-01",
        "２０２５-10",
        "2025-1０",
    ],
)
def test_a_build_that_is_not_a_date_is_refused_with_the_format(bad: str) -> None:
    with pytest.raises(InputError, match="YYYY-MM"):
        normalise_build(bad)


def test_old_build_prefill_is_an_fp16_gemm_plus_a_dequantization_pass() -> None:
    """compute = prompt x matmul FLOPs / (fp16 peak x f16 efficiency x ratio); dequantization =
    micro-batches x (quantized bytes read + fp16 bytes written) / reached bandwidth."""
    spec = dense_model()
    acc = replace(gpu(), id="rtx-4090")  # the hand-made device, with an RTX 4090's capability 8.9
    ctx = replace(context(spec, quant="Q4_0"), engine_build="2023-12")
    parts = prefill_stage_parts(ctx, stage(acc), 1024)
    matmul, _ = flops_parts(spec, 512)
    compute = 1024 * matmul / (100e12 * 0.5 * Q4_0_RATIO)  # CAL prefill efficiency 0.5
    assert parts["compute"] == pytest.approx(compute, rel=1e-3)
    bandwidth = acc.memory_bandwidth_bytes_per_s * 0.8  # CAL decode bandwidth efficiency
    dequant = 2 * (spec.weights_bytes("Q4_0") + spec.weights_bytes("f16")) / bandwidth
    assert parts["dequantization"] == pytest.approx(dequant)
    assert "dequantization" not in prefill_stage_parts(
        context(spec, quant="Q4_0"), stage(acc), 1024
    )


def test_a_build_date_is_read_as_the_calendar_has_it() -> None:
    assert normalise_build("2024-02-29") == "2024-02-29"  # a leap day
    assert normalise_build(" 2023-12 ") == "2023-12-01"


def test_catalog_schema_documents_every_effect() -> None:
    # before: decode_gemm_tile_sm_flops (95c90fd) was read by the planner but not in SCHEMA.md
    from pathlib import Path

    from rigwise.estimate import engine_builds

    schema = (Path(engine_builds.__file__).parents[1] / "catalog" / "SCHEMA.md").read_text()
    section = schema.split("## engine_builds.csv", 1)[1].split("\n## ", 1)[0]
    effects = [engine_builds.DEQUANT_GEMM, engine_builds.SPEED_SCALE, engine_builds.TILE_M]
    for effect in [*effects, engine_builds.TILE_N, engine_builds.TILE_SM_FLOPS]:
        assert section.count(f"`{effect}`") >= 2, effect  # in `effect` and in `value`
