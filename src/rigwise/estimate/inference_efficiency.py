"""The fraction of a device's peak one inference engine reaches, and the peak itself.

Bandwidth and compute efficiencies are data (``catalog/data/efficiency_inference.csv``), per
engine x device class x quant kernel (the most specific row, ``engine_overheads.best_row``);
a user's measured ``calibration`` overrides them key by key (``CALIBRATION_KEYS``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from rigwise.errors import InputError
from rigwise.estimate.engine_overheads import best_row, device_class
from rigwise.estimate.inference_stages import Stage
from rigwise.hardware import Accelerator

CALIBRATION_KEYS = (
    "decode_bandwidth_efficiency",
    "decode_kv_bandwidth_efficiency",
    "decode_compute_efficiency",
    "prefill_compute_efficiency",
    "prefill_attention_efficiency",
    "serving_compute_efficiency",
    "moe_expert_efficiency",
)


@dataclass(frozen=True)
class Efficiency:
    """Fractions of the datasheet peaks one engine reaches on one device class and quant."""

    decode_bandwidth_efficiency: float
    decode_kv_bandwidth_efficiency: float
    decode_overhead_per_layer_s: float
    decode_compute_efficiency: float
    prefill_dtype: str
    prefill_compute_efficiency: float
    prefill_attention_efficiency: float
    serving_compute_efficiency: float
    moe_expert_efficiency: float  # extra factor on routed-expert weight reads (grouped GEMMs)
    source: str


@functools.cache
def catalog_efficiency(engine: str, klass: str, quant: str) -> Efficiency:
    row = best_row("efficiency_inference.csv", engine=engine, device_class=klass, quant=quant)
    return Efficiency(
        decode_bandwidth_efficiency=float(row["decode_bandwidth_efficiency"]),
        decode_kv_bandwidth_efficiency=float(row["decode_kv_bandwidth_efficiency"]),
        decode_overhead_per_layer_s=float(row["decode_overhead_per_layer_us"]) * 1e-6,
        decode_compute_efficiency=float(row["decode_compute_efficiency"]),
        prefill_dtype=row["prefill_dtype"],
        prefill_compute_efficiency=float(row["prefill_compute_efficiency"]),
        prefill_attention_efficiency=float(row["prefill_attention_efficiency"]),
        serving_compute_efficiency=float(row["serving_compute_efficiency"]),
        moe_expert_efficiency=float(row["moe_expert_efficiency"]),
        source=row["source"],
    )


def efficiency(
    engine: str, stage: Stage, quant: str, calibration: Mapping[str, float] | None
) -> Efficiency:
    """The catalog factors for this stage's device, overridden by measured ``calibration``."""
    found = catalog_efficiency(engine, device_class(stage.accelerator), quant.lower())
    if not calibration:
        return found
    unknown = sorted(set(calibration) - set(CALIBRATION_KEYS))
    if unknown:
        raise InputError(
            f"Unknown calibration key(s) {', '.join(unknown)}.",
            hint=f"Use: {', '.join(CALIBRATION_KEYS)}.",
        )
    for key, value in calibration.items():
        if not 0 < float(value) <= 1.5:
            raise InputError(f"Calibration {key}={value!r} is not a fraction of peak (0-1.5].")
    overrides: dict[str, Any] = {k: float(v) for k, v in calibration.items()}
    return replace(found, **overrides)


def peak_flops(accelerator: Accelerator, dtype: str) -> float:
    """Dense peak for ``dtype``; ``fp16_acc16`` is fp16 with fp16 accumulate (GeForce cards
    run it at twice the fp32-accumulate rate; others at the same rate)."""
    if dtype == "fp16_acc16":
        return getattr(accelerator, "fp16_acc16_flops", None) or accelerator.peak_flops("fp16")
    return accelerator.peak_flops(dtype)
