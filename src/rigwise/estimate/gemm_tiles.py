"""Tile floor of decode GEMMs whose kernel runs one large tile at every batch size.

A CUTLASS GEMM of M x K by K x N launches ceil(M / tile_m) x ceil(N / tile_n) thread blocks
(CTAs), one per SM at a time, and each CTA issues every MMA of its tile over the whole K, the
rows past M zero-filled but multiplied all the same ("tile quantization"; the CTAs run in waves
of one per SM, "wave quantization": NVIDIA Deep Learning Performance guide, "Matrix
Multiplication Background"). A decode step of M tokens far below tile_m thus pays the tile's
FLOPs at one SM's share of the peak, on as few SMs as the output has column tiles, and no less
than its bytes at the reached bandwidth. Published kernel timings show it on SM120: vLLM PR
#37970 (RTX Blackwell, block-FP8 128x128x128 tile) measured 187 us at M = 16, 32 and 48 alike
for a 5120 x 16384 GEMM, and 97 us with a 64-row tile: the time follows the tile's rows, not M.

Only builds whose ``engine_builds.csv`` rows give the tile (``decode_gemm_tile_m`` /
``decode_gemm_tile_n``) and devices with an SM count (``sm_counts.csv``) get the floor. The
GEMMs are the dense linear layers on one device: the attention projections (not for MLA), the
dense layers' MLP and the MoE layers' shared experts; the routed experts run the fused MoE
kernel (``inference_moe``), the embedding and the head stay 16-bit.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rigwise.catalog.loader import read_csv
from rigwise.catalog.match import first_glob_row
from rigwise.estimate.elementwise import maximum
from rigwise.estimate.engine_builds import build_effects
from rigwise.estimate.engine_overheads import device_class
from rigwise.estimate.engine_rules import compute_capability
from rigwise.estimate.inference_stages import Stage
from rigwise.models import ModelSpec
from rigwise.models.quant import quant_format


@functools.cache
def sm_count(accelerator_id: str) -> int | None:
    """Streaming multiprocessors of a catalog id (``sm_counts.csv``; None where not listed)."""
    row = first_glob_row(read_csv("sm_counts.csv"), "accelerator", accelerator_id)
    return int(row["sm_count"]) if row else None


@dataclass(frozen=True)
class TileFloor:
    """One device's dense decode GEMMs under a one-tile kernel."""

    tile_m: int
    tile_n: int
    sms: int
    sm_flops: float  # one SM's rate on the tile (engine_builds.csv), else its share of the peak
    weight_bytes: float  # bytes per quantized weight
    gemms: tuple[tuple[int, int, float], ...]  # (N, K, how many on the device per step)


def tile_floor(
    engine: str, quant: str, build: str | None, spec: ModelSpec, stage: Stage, peak: float
) -> TileFloor | None:
    """The stage's ``TileFloor`` when the ``build`` of ``engine`` ran one GEMM tile for
    ``quant`` on its device (``engine_builds.csv``) and the device's SM count is listed;
    ``peak``: the kernel dtype's dense FLOP/s. None otherwise (the current build: none)."""
    if build is None:
        return None
    acc = stage.accelerator
    effects = build_effects(engine, device_class(acc), quant, build, compute_capability(acc.id))
    sms = sm_count(acc.id)
    if effects.decode_gemm_tile is None or not sms or peak <= 0:
        return None
    tile_m, tile_n = effects.decode_gemm_tile
    bits = quant_format(quant).bits_per_weight
    sm_flops = effects.decode_gemm_tile_sm_flops or peak / sms  # measured, else the peak's share
    return TileFloor(tile_m, tile_n, sms, sm_flops, bits / 8, dense_gemms(spec, stage))


def dense_gemms(spec: ModelSpec, stage: Stage) -> tuple[tuple[int, int, float], ...]:
    """(N, K, count) of the dense linear layers one device of ``stage`` runs per decode step:
    qkv and output projections (heads split over ``attention_tp``, KV heads replicated when
    fewer than the devices), gate-up and down of the dense MLP layers and of the shared experts
    (intermediate width split over ``tp``)."""
    layers = spec.num_layers * stage.layer_fraction
    moe = spec.moe
    moe_layers = 0.0
    if moe:
        moe_layers = min(layers, (moe.num_moe_layers or spec.num_layers) * stage.layer_fraction)
    hidden, up = spec.hidden_size, 2 if spec.gated_mlp else 1
    gemms: list[tuple[int, int, float]] = []
    if spec.mla is None:
        heads = max(1, spec.num_attention_heads // stage.attention_tp)
        kv = max(1, spec.num_kv_heads // stage.attention_tp)
        gemms += [((heads + 2 * kv) * spec.head_dim, hidden, layers)]
        gemms += [(hidden, heads * spec.head_dim, layers)]
    widths = [(spec.intermediate_size, layers - moe_layers)]
    if moe and moe.num_shared_experts:
        widths.append((moe.num_shared_experts * moe.shared_intermediate_size, moe_layers))
    for width, count in widths:
        share = width // stage.tp
        if share and count > 0:
            gemms += [(up * share, hidden, count), (hidden, share, count)]
    return tuple(gemms)


def tile_floor_seconds(floor: TileFloor, batch: Any, bandwidth: float) -> Any:
    """Seconds of the GEMMs in ``floor`` at ``batch`` tokens: each the longer of its waves of
    whole tiles (2 tile_m tile_n K FLOPs per CTA at one SM's peak) and its weights' bytes at
    ``bandwidth`` (the reached one)."""
    rows = -(-batch // floor.tile_m)
    total: Any = 0.0
    for n, k, count in floor.gemms:
        waves = -(-(rows * -(-n // floor.tile_n)) // floor.sms)
        tiles = waves * 2.0 * floor.tile_m * floor.tile_n * k / floor.sm_flops
        total = total + count * maximum(tiles, n * k * floor.weight_bytes / bandwidth)
    return total


def own_roofline_seconds(floor: TileFloor, batch: Any, per_byte: float, per_flop: Any) -> Any:
    """Seconds the step's rooflines already give the GEMMs in ``floor`` at ``batch`` tokens:
    the longer of their weights' bytes (``per_byte`` seconds each) and their FLOPs
    (``per_flop``). What the tiles take beyond it is the older build's extra: the other dense
    weights (the head, MLA attention) are still read beside it."""
    params = sum(n * k * count for n, k, count in floor.gemms)
    return maximum(params * floor.weight_bytes * per_byte, 2.0 * params * batch * per_flop)


def tiles_beyond_roofline(
    floor: TileFloor, batch: Any, bandwidth: float, dequant: float, per_flop: Any
) -> Any:
    """An older build's decode part ``gemm_tiles``: the whole tiles' time beyond the roofline
    the step already gives their GEMMs (``dequant`` bytes-equivalent per byte over the reached
    ``bandwidth``; ``per_flop`` seconds a FLOP), never below 0."""
    own = own_roofline_seconds(floor, batch, dequant / bandwidth, per_flop)
    return maximum(tile_floor_seconds(floor, batch, bandwidth) - own, 0.0)


def tile_note(parts: Mapping[str, float], seconds: float, build: str | None) -> tuple[str, ...]:
    """The note a decode priced with an older build's whole tiles carries (none otherwise): the
    share of a token's time they take at batch 1 (``decode_phase``'s, whatever the serving
    concurrency), and that a later build is the lever."""
    tiles = parts.get("gemm_tiles", 0.0)
    if tiles <= 0.0:
        return ()
    return (
        "Decode of one sequence (the decode line) pays the engine build's whole FP8 GEMM tiles: "
        f"{tiles * 1e3:.3g} of its {seconds * 1e3:.3g} ms a token (--engine-build {build}, "
        "catalog/data/engine_builds.csv); later builds do not.",
    )


__all__ = [
    "TileFloor",
    "dense_gemms",
    "own_roofline_seconds",
    "sm_count",
    "tile_floor",
    "tile_floor_seconds",
    "tile_note",
    "tiles_beyond_roofline",
]
