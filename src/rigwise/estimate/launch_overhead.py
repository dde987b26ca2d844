"""Per-layer decode overhead that scales with the device: GPU cycles, not a fixed floor.

At batch 1 a decode step is a chain of small kernels per layer (norms, rope, the matrix-vector
products, attention, adds). Engines capture the step in a CUDA graph (llama.cpp since PR #6766,
vLLM and TensorRT-LLM by default), which removes the CPU launch cost (NVIDIA, "Getting Started
with CUDA Graphs", 2019: per-kernel cost fell from 3.8 us to 3.4 us for a 2.9 us kernel); what
is left is GPU-side: inter-kernel gaps and the ramp-up / tail of latency-bound kernels, which
take a number of GPU clock cycles. So ``decode_overhead_per_layer_us`` in
``efficiency_inference.csv`` holds at a reference clock (``decode_overhead_clock.csv``) and a
device pays ``reference / its boost clock`` of it (``gpu_clocks.csv``). Engines with no row
there (transformers: Python dispatch on the host) keep a fixed cost.
"""

from __future__ import annotations

import functools

from rigwise.catalog.loader import read_csv
from rigwise.catalog.match import first_glob_row
from rigwise.estimate.engine_overheads import best_row, device_class
from rigwise.hardware import Accelerator


@functools.cache
def boost_clock_hz(accelerator_id: str) -> float | None:
    """Boost clock of a catalog GPU id (None where ``gpu_clocks.csv`` lists none)."""
    row = first_glob_row(read_csv("gpu_clocks.csv"), "accelerator", accelerator_id)
    return float(row["boost_clock_mhz"]) * 1e6 if row else None


@functools.cache
def reference_clock_hz(engine: str, klass: str) -> float | None:
    """The clock an engine's per-layer overhead was fitted at (None: a host-side fixed cost)."""
    row = best_row("decode_overhead_clock.csv", engine=engine, device_class=klass)
    value = row["reference_clock_mhz"]
    return float(value) * 1e6 if value else None


def clock_scale(engine: str, accelerator: Accelerator) -> float:
    """Factor on the catalog per-layer overhead for this device: reference clock / its clock."""
    reference = reference_clock_hz(engine, device_class(accelerator))
    clock = boost_clock_hz(accelerator.id)
    if reference is None or clock is None:
        return 1.0
    return reference / clock


__all__ = ["boost_clock_hz", "clock_scale", "reference_clock_hz"]
