"""Dequantisation traffic of quantized weight kernels at decode (``dequant_kernels.csv``).

Fused kernels (llama.cpp MMVQ, Marlin, ExLlama, AutoAWQ) dequantize in registers and read the
packed weights once. bitsandbytes NF4/FP4 in transformers dequantizes each weight to a 16-bit
tensor in memory and multiplies with a 16-bit GEMM: 2 B written + 2 B read per weight on top of
the packed read, so a 4-bit model decodes slower than its 16-bit original on the same GPU.
"""

from __future__ import annotations

import functools

from rigwise.errors import InputError
from rigwise.estimate.engine_overheads import best_row
from rigwise.models.quant import quant_format


@functools.cache
def extra_traffic_ratio(engine: str, quant: str) -> float:
    """Extra bytes moved per byte of packed weight read (0 for fused kernels)."""
    row = best_row("dequant_kernels.csv", engine=engine, quant=quant.lower())
    extra = float(row["extra_bytes_per_weight"])
    if not extra:
        return 0.0
    try:
        bits = quant_format(quant).bits_per_weight
    except InputError:
        return 0.0  # a quant the catalog does not list has no dequant row either
    return extra / (bits / 8)


__all__ = ["extra_traffic_ratio"]
