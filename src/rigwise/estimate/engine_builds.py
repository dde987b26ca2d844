"""What an older engine build did differently, by build date (``engine_builds.csv``).

A plan may name the build it models (``engine_build``, YYYY-MM or YYYY-MM-DD); the rows whose
``until`` date is later apply, the most specific per effect. The effects:

- ``prefill_dequant_fp16_gemm``: quantized prompt processing dequantizes each weight matrix to
  fp16 and runs an fp16 GEMM (llama.cpp CUDA before PR #8075, 2024-06-23). The GEMM runs at the
  f16 kernel's efficiency and a separate dequantization pass reads the quantized weights and
  writes fp16 ones (quantized + 2 bytes per weight) once per micro-batch.
- ``prefill_speed_scale``: the prompt-processing rate relative to the next build, a ratio of two
  published runs on one GPU (e.g. llama.cpp PR #4766, 1.03-1.05x on an RTX 3090).
- ``decode_gemm_tile_m`` / ``decode_gemm_tile_n``: the quantized linear layers ran one CUTLASS
  tile shape at every batch size (vLLM's SM120 FP8 kernel before PR #34424), so a decode GEMM
  pays its whole tile's MMAs (``estimate.gemm_tiles``).
- ``decode_gemm_tile_sm_flops``: one SM's measured rate on that tile (a kernel timing), used
  instead of the dense peak's share per SM.
- ``decode_moe_unoverlapped``: the fused MoE kernel's default config (vLLM before PR #34846) let
  the experts' weight streaming and MMAs overlap only partly: a serving step's expert kernel
  takes the longer of its byte and FLOP times plus this share of the shorter
  (``inference_moe.partly_overlapped``).
"""

from __future__ import annotations

import datetime
import functools
import re
from dataclasses import dataclass

from rigwise.catalog.loader import read_csv
from rigwise.catalog.match import specificity
from rigwise.errors import CatalogError, InputError
from rigwise.estimate.engine_overheads import device_class
from rigwise.estimate.engine_rules import compute_capability
from rigwise.hardware import Accelerator

_DATE = re.compile(r"^([0-9]{4})-([0-9]{2})(?:-([0-9]{2}))?$")
DEQUANT_GEMM = "prefill_dequant_fp16_gemm"
SPEED_SCALE = "prefill_speed_scale"
TILE_M = "decode_gemm_tile_m"
TILE_N = "decode_gemm_tile_n"
TILE_SM_FLOPS = "decode_gemm_tile_sm_flops"
MOE_UNOVERLAPPED = "decode_moe_unoverlapped"


@dataclass(frozen=True)
class BuildEffects:
    """How an older build's prompt processing differs from the current build's."""

    dequant_gemm: bool = False
    prefill_speed_scale: float = 1.0
    decode_gemm_tile: tuple[int, int] | None = None  # (rows, columns) of the one GEMM tile
    decode_gemm_tile_sm_flops: float | None = None  # one SM's measured rate on that tile
    moe_unoverlapped: float = 0.0  # share of the expert kernel's shorter side not overlapped
    sources: tuple[str, ...] = ()


CURRENT = BuildEffects()


def normalise_build(build: str) -> str:
    """'2023-12' -> '2023-12-01'; a bad date is an InputError naming the value. The builds are
    compared as text, so only ASCII digits of a day the calendar has pass ('2026-02-30' and
    fullwidth digits, which sort after every ASCII date, were read as a current build)."""
    match = _DATE.match(build.strip())
    try:
        if not match:
            raise ValueError
        year, month, day = match.group(1), match.group(2), match.group(3) or "01"
        datetime.date(int(year), int(month), int(day))
    except ValueError:
        raise InputError(
            f"Engine build {build!r} is not a date.",
            hint="Give the build date as YYYY-MM or YYYY-MM-DD, e.g. engine_build='2023-12'.",
        ) from None
    return f"{year}-{month}-{day}"


def _below_minimum(row: dict[str, str], capability: float | None) -> bool:
    """A row with ``min_compute_capability`` skips devices below it (or with none listed)."""
    minimum = row.get("min_compute_capability", "")
    return bool(minimum) and (capability is None or capability < float(minimum))


@functools.cache
def build_effects(
    engine: str, klass: str, quant: str, build: str | None, capability: float | None = None
) -> BuildEffects:
    """The effects of the rows that apply to ``build`` (None: the current build, no effect) on
    a device of compute ``capability`` (NVIDIA; None for others)."""
    if build is None:
        return CURRENT
    day = normalise_build(build)
    keys = {"engine": engine, "device_class": klass, "quant": quant.lower()}
    best: dict[str, tuple[tuple[int, int, int], dict[str, str]]] = {}
    for row in read_csv("engine_builds.csv"):
        score = specificity(row, keys)
        if score is None or day >= row["until"] or _below_minimum(row, capability):
            continue
        held = best.get(row["effect"])
        if held is None or score > held[0]:
            best[row["effect"]] = (score, row)
    unknown = set(best) - {
        DEQUANT_GEMM,
        SPEED_SCALE,
        TILE_M,
        TILE_N,
        TILE_SM_FLOPS,
        MOE_UNOVERLAPPED,
    }
    if unknown:
        raise CatalogError(f"engine_builds.csv: unknown effect(s) {', '.join(sorted(unknown))}.")
    scale, sm_rate, moe = best.get(SPEED_SCALE), best.get(TILE_SM_FLOPS), best.get(MOE_UNOVERLAPPED)
    tile_m, tile_n = best.get(TILE_M), best.get(TILE_N)
    if (tile_m is None) != (tile_n is None):
        raise CatalogError(f"engine_builds.csv: {TILE_M} and {TILE_N} come as a pair.")
    return BuildEffects(
        dequant_gemm=DEQUANT_GEMM in best,
        prefill_speed_scale=float(scale[1]["value"]) if scale else 1.0,
        decode_gemm_tile=(
            (int(tile_m[1]["value"]), int(tile_n[1]["value"])) if tile_m and tile_n else None
        ),
        decode_gemm_tile_sm_flops=float(sm_rate[1]["value"]) if sm_rate else None,
        moe_unoverlapped=float(moe[1]["value"]) if moe else 0.0,
        sources=tuple(row["source"] for _, row in best.values()),
    )


def effects_on(
    engine: str, accelerator: Accelerator, quant: str, build: str | None
) -> BuildEffects:
    """``build_effects`` for a plan's device: its class and compute capability."""
    capability = compute_capability(accelerator.id) if build else None
    return build_effects(engine, device_class(accelerator), quant, build, capability)
