"""What one stage's prefill and decode take from the catalog (reached efficiencies, peaks,
an older build's effects, launch overhead): the same for every request of a setup, so looked
up once per (context, stage) objects (``IdentityMemo``) and shared by the plans of a sweep.
Split from ``inference``, whose formulas use them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rigwise.estimate.dequant import extra_traffic_ratio
from rigwise.estimate.engine_builds import BuildEffects, effects_on
from rigwise.estimate.engine_overheads import device_class
from rigwise.estimate.gemm_tiles import TileFloor, tile_floor
from rigwise.estimate.identity_memo import IdentityMemo
from rigwise.estimate.inference_efficiency import Efficiency, efficiency, peak_flops
from rigwise.estimate.inference_moe import moe_kernel
from rigwise.estimate.inference_stages import Stage
from rigwise.estimate.launch_overhead import clock_scale

if TYPE_CHECKING:
    from rigwise.estimate.inference import Context


def attention_dtype(ctx: Context, eff: Efficiency) -> str:
    """Attention kernels (FlashAttention/FMHA) run at 16 bits (fp8 with an fp8 KV cache) even
    when the weights' matmuls run at fp8/fp4; 16-bit and wider matmul dtypes are kept."""
    if eff.prefill_dtype not in ("fp8", "fp4", "int8"):
        return eff.prefill_dtype
    return "fp8" if ctx.kv_dtype.lower().startswith("fp8") else "bf16"


@dataclass(frozen=True)
class StageFactors:
    """What one stage's prefill and decode take from the catalog: the same for every request
    of a setup, so looked up once per (context, stage) pair (``stage_factors``)."""

    eff: Efficiency
    build: BuildEffects  # an older build's effects (engine_builds.csv)
    reached: float  # the prefill GEMMs' reached FLOP/s (an older build's dequantised fp16 ones)
    attention_peak: float  # peak FLOP/s at the attention kernels' dtype (attention_dtype)
    dequant: float  # 1 + the bytes unfused dequantisation kernels move per weight byte
    peak: float  # dense peak FLOP/s at the engine's prefill dtype
    grouped: float  # grouped-GEMM efficiency of routed experts (0: dense, or one GEMM)
    launch_s: float  # per-layer launch overhead of the stage's layers at the device's clock
    tiles: TileFloor | None = None  # an older build's one-tile dense GEMMs (gemm_tiles)
    moe_unoverlapped: float = 0.0  # an older build's fused MoE overlap (inference_moe)


_FACTORS: IdentityMemo[StageFactors] = IdentityMemo()


def stage_factors(ctx: Context, stage: Stage) -> StageFactors:
    """``StageFactors`` of a stage, kept per (context, stage) objects: the plans of one setup
    share them."""
    return _FACTORS.get((ctx, stage), None, lambda: _looked_up(ctx, stage))


def _looked_up(ctx: Context, stage: Stage) -> StageFactors:
    eff = efficiency(ctx.engine, stage, ctx.quant, ctx.calibration)
    acc = stage.accelerator
    build = effects_on(ctx.engine, acc, ctx.quant, ctx.engine_build)
    gemm = efficiency(ctx.engine, stage, "f16", ctx.calibration) if build.dequant_gemm else eff
    layers = ctx.spec.num_layers * stage.layer_fraction
    peak = peak_flops(acc, eff.prefill_dtype)
    return StageFactors(
        eff=eff,
        build=build,
        reached=peak_flops(acc, gemm.prefill_dtype) * gemm.prefill_compute_efficiency,
        attention_peak=peak_flops(acc, attention_dtype(ctx, eff)),
        dequant=1 + extra_traffic_ratio(ctx.engine, ctx.quant),
        peak=peak,
        grouped=moe_kernel(ctx.engine, device_class(acc)).gemm_efficiency if ctx.spec.moe else 0.0,
        launch_s=layers * eff.decode_overhead_per_layer_s * clock_scale(ctx.engine, acc),
        tiles=tile_floor(ctx.engine, ctx.quant, ctx.engine_build, ctx.spec, stage, peak),
        moe_unoverlapped=build.moe_unoverlapped,
    )
