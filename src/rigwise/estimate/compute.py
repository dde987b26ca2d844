"""How fast a device runs the kernels of training: efficiency factors from data, GEMM time.

Factors live in ``catalog/data/efficiency_training.csv`` (one physical factor per row, e.g.
large-GEMM efficiency per device generation, NCCL bus-bandwidth efficiency per link kind). A
``calibration`` mapping of factor names to measured values overrides the catalog for a run.

GEMM efficiency falls for thin matrices: ``eff = eff_max * d / (d + d_half)`` where ``d`` is
the smallest GEMM dimension. This is the simplest curve that captures tile quantisation and
partial waves (NVIDIA "Matrix Multiplication Background" user's guide: small N/K leave SMs
idle); ``d_half`` is fitted once across runs, not per row.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from rigwise.catalog.loader import read_csv
from rigwise.catalog.match import most_specific
from rigwise.errors import CatalogError, InputError
from rigwise.estimate.elementwise import as_float
from rigwise.serialize import JsonObject

FILE = "efficiency_training.csv"


@dataclass(frozen=True)
class TrainingFactors(JsonObject):
    """Efficiency factors for one accelerator (link factors are looked up by kind)."""

    matmul_efficiency_bf16: float
    matmul_efficiency_fp8: float
    matmul_efficiency_fp8_rowwise: float
    matmul_efficiency_fp8_mxfp8: float
    gemm_half_dim: float
    float8_cast_bytes_per_element: float
    attention_efficiency_flash: float
    attention_efficiency_standard: float
    memory_bandwidth_efficiency: float
    elementwise_traffic: float
    elementwise_traffic_unfused: float
    async_tp_overlap: float
    layer_overhead_s: float
    host_memory_bandwidth_bytes_per_s: float
    step_overhead_s: float
    power_utilisation: float
    goodput: float
    power_cap_exponent: float
    memory_reserved_bytes: float
    nccl_buffer_bytes: float
    fragmentation_fraction: float
    bus_efficiency_by_kind: Mapping[str, float]

    def outside_allocator_bytes(self, gpus: Any) -> Any:
        """Bytes a GPU holds outside PyTorch's caching allocator, so that no
        ``torch.cuda.max_memory_reserved`` counts them (PyTorch: memory_reserved is "the GPU
        memory managed by the caching allocator"): the CUDA context, and NCCL's communicator
        buffers, which NCCL allocates itself and only a job of more than one GPU has. The
        cuBLAS workspaces in the same factor row come from the allocator, but are tens of MiB
        per stream (PyTorch CUDA semantics notes), under 0.1 GiB."""
        nccl = np.where(np.asarray(gpus) > 1, self.nccl_buffer_bytes, 0.0)
        return self.memory_reserved_bytes + nccl

    def bus_efficiency(self, link_kind: str) -> float:
        table = self.bus_efficiency_by_kind
        return table.get(link_kind, table.get("*", 1.0))

    def matmul_efficiency(self, precision: str, float8_scaling: str = "tensorwise") -> float:
        if precision != "fp8":
            return self.matmul_efficiency_bf16
        if float8_scaling == "rowwise":
            return self.matmul_efficiency_fp8_rowwise
        if float8_scaling == "mxfp8":  # 1x32 block scales applied in the MMA (Blackwell)
            return self.matmul_efficiency_fp8_mxfp8
        return self.matmul_efficiency_fp8


_DEVICE_FACTORS = tuple(
    f.name for f in fields(TrainingFactors) if f.name != "bus_efficiency_by_kind"
)


_OTHER_PLANNERS = ("matmul_efficiency_", "decode_", "prefill_", "serving_")


def _rows_by_factor() -> dict[str, list[dict[str, str]]]:
    table: dict[str, list[dict[str, str]]] = {}
    for row in read_csv(FILE):
        table.setdefault(row["factor"], []).append(row)
    return table


def training_factors(
    accelerator_id: str, calibration: Mapping[str, float] | None = None
) -> TrainingFactors:
    """Factors for ``accelerator_id`` with ``calibration`` overriding catalog values."""
    rows = _rows_by_factor()
    calibration = dict(calibration or {})
    unknown = (
        set(calibration) - set(_DEVICE_FACTORS) - {f"bus_efficiency_{k}" for k in _link_kinds(rows)}
    )
    if unknown:
        raise InputError(
            f"Unknown calibration key(s): {', '.join(sorted(unknown))}.",
            hint=f"Use one of: {', '.join(_DEVICE_FACTORS)}, bus_efficiency_<link kind>.",
        )
    for key, value in calibration.items():
        _check_calibration(key, value)
    values: dict[str, Any] = {}
    for name in _DEVICE_FACTORS:
        if name in calibration:
            values[name] = float(calibration[name])
            continue
        row = most_specific(rows.get(name, []), applies_to=accelerator_id)
        if row is None:
            raise CatalogError(f"{FILE}: no row for factor {name!r} matches {accelerator_id!r}.")
        values[name] = float(row["value"])
    bus = {row["applies_to"]: float(row["value"]) for row in rows.get("bus_efficiency", [])}
    for kind in list(bus):
        bus[kind] = float(calibration.get(f"bus_efficiency_{kind}", bus[kind]))
    return TrainingFactors(bus_efficiency_by_kind=bus, **values)


# Calibration factors that are a share of something (a peak, the time a GPU is busy or useful).
_SHARES = ("goodput", "power_utilisation", "fragmentation_fraction", "async_tp_overlap")


def _check_calibration(key: str, value: object) -> None:
    """A calibrated factor the planner can use: an efficiency a fraction of peak (0-1.5], as
    plan_inference asks; a share (0-1]; any other factor (bytes, seconds, an exponent) a finite
    number >= 0. A negative matmul efficiency planned 2.5M tokens/s, an infinite one ran."""
    number = float(value)  # type: ignore[arg-type]
    if "efficiency" in key:
        if not 0 < number <= 1.5:
            raise InputError(f"Calibration {key}={value!r} is not a fraction of peak (0-1.5].")
    elif key in _SHARES:
        if not 0 <= number <= 1:
            raise InputError(f"Calibration {key}={value!r} is not a share from 0 to 1.")
    elif not (math.isfinite(number) and number >= 0):
        raise InputError(f"Calibration {key}={value!r} is not a finite number >= 0.")


@functools.lru_cache(maxsize=256)
def catalog_training_factors(accelerator_id: str) -> TrainingFactors:
    """``training_factors`` without calibration, read once per device: the training planner
    and the MoE prefill estimate ask for the same device's factors thousands of times in a
    sweep (the object is shared: frozen, never changed)."""
    return training_factors(accelerator_id)


def _link_kinds(rows: dict[str, list[dict[str, str]]]) -> list[str]:
    return [row["applies_to"] for row in rows.get("bus_efficiency", [])]


def shape_efficiency(smallest_dim: Any, factors: TrainingFactors) -> Any:
    """Fraction of the large-GEMM efficiency a GEMM with this smallest dimension reaches."""
    d = as_float(smallest_dim)  # a number for one plan (no numpy import), arrays for a search
    return d / (d + factors.gemm_half_dim)


def gemm_seconds(
    flops: Any,
    m: Any,
    n: Any,
    k: Any,
    peak_flops: float,
    efficiency: float,
    factors: TrainingFactors,
) -> Any:
    """Time of GEMM work ``flops`` of shape (m x k) @ (k x n) at the device's efficiency."""
    import numpy as np  # here, not at the top: an inference plan imports this module without numpy

    # An absent GEMM (zero width, e.g. no dense MLP in an all-MoE model) takes no time.
    smallest = np.maximum(np.minimum(np.minimum(m, n), k), 1.0)
    return flops / (peak_flops * efficiency * shape_efficiency(smallest, factors))
