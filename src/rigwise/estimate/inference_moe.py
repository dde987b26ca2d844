"""Routed experts in prefill: grouped GEMMs that are thin when few tokens reach each expert.

A step of ``tokens`` tokens sends ``tokens x top_k / n_experts`` of them to each routed expert
(uniform routing), and the expert's GEMM is (tokens per expert) x hidden @ hidden x
(intermediate / expert tensor-parallel width). GEMM efficiency falls for thin matrices as
``d / (d + d_half)`` with ``d`` the smallest dimension (tile quantisation and partial waves,
NVIDIA "Matrix Multiplication Background" user's guide); ``d_half`` is the training side's
``gemm_half_dim`` (``efficiency_training.csv``, ``estimate.compute.shape_efficiency``), the
same physics on the same devices. The fitted prefill efficiency stands for large GEMMs (dense
models' shapes, where the curve is near 1), so only the expert share of the FLOPs is slowed.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from rigwise.estimate.engine_overheads import best_row, device_class
from rigwise.estimate.inference_memory import routed_expert_matrices
from rigwise.estimate.inference_stages import Stage
from rigwise.estimate.launch_overhead import boost_clock_hz
from rigwise.models import ModelSpec


def routed_expert_flops_per_token(spec: ModelSpec) -> float:
    """Matmul FLOPs per token in the routed experts: 2 x layers x top_k x matrices x h x i."""
    if spec.moe is None:
        return 0.0
    layers, per_expert = routed_expert_matrices(spec)
    return 2.0 * layers * spec.moe.experts_per_token * per_expert


def expert_smallest_dim(spec: ModelSpec, stage: Stage, tokens: int) -> float:
    """Smallest dimension of one routed expert's GEMM in a step of ``tokens`` tokens: tokens
    per expert, the expert's intermediate width per device (experts are tensor-parallel over
    ``tp / ep`` devices), or the hidden size."""
    moe = spec.moe
    if moe is None or moe.num_experts < 1:
        return float(spec.hidden_size)
    per_expert = tokens * moe.experts_per_token / moe.num_experts
    width = moe.expert_intermediate_size / max(1, stage.tp // max(1, stage.ep))
    return max(1.0, min(per_expert, width, float(spec.hidden_size)))


def expert_gemm_factor(spec: ModelSpec, stage: Stage, tokens: int, matmul_flops: float) -> float:
    """Time factor on a step's matmul time (``matmul_flops`` per token) from the routed
    experts' thin GEMMs: 1 for dense models; share x (1 / shape efficiency - 1) more for MoE."""
    expert = routed_expert_flops_per_token(spec)
    if expert <= 0 or matmul_flops <= 0:
        return 1.0
    # here, not at the top: only an MoE plan needs the training factors (start-up of a dense one)
    from rigwise.estimate.compute import catalog_training_factors, shape_efficiency

    factors = catalog_training_factors(stage.accelerator.id)
    shape = float(shape_efficiency(expert_smallest_dim(spec, stage, tokens), factors))
    share = min(1.0, expert / matmul_flops)
    return 1.0 + share * (1.0 / shape - 1.0)


@dataclass(frozen=True)
class MoEKernel:
    """An engine's fused MoE block in decode (``moe_kernel_overheads.csv``)."""

    layer_s: float  # GPU time per MoE layer beyond streaming the experts' weights
    expert_s: float  # and per routed expert the step touches on the device
    reference_hz: float | None  # the clock both hold at (None: not scaled)
    gemm_efficiency: float  # share of the dtype's peak its grouped GEMMs reach (0: not split)


@functools.cache
def moe_kernel(engine: str, klass: str) -> MoEKernel:
    """The ``moe_kernel_overheads.csv`` row for ``engine`` on device class ``klass``."""
    row = best_row("moe_kernel_overheads.csv", engine=engine, device_class=klass)
    clock = row["reference_clock_mhz"]
    return MoEKernel(
        layer_s=float(row["moe_layer_overhead_us"] or 0.0) * 1e-6,
        expert_s=float(row["expert_overhead_us"] or 0.0) * 1e-6,
        reference_hz=float(clock) * 1e6 if clock else None,
        gemm_efficiency=float(row["expert_gemm_efficiency"] or 0.0),
    )


def moe_kernel_seconds(spec: ModelSpec, engine: str, stage: Stage, touched: Any) -> Any:
    """GPU time of one decode step's fused MoE blocks on one device of ``stage`` beyond
    streaming the experts' bytes: per MoE layer a fixed cost plus one per routed expert the
    step touches on the device (``touched``: share of the experts, ``inference.touched_share``;
    an expert-parallel rank holds E / ep of them), in GPU cycles: scaled by the data's
    reference clock over the device's boost clock. 0 for dense models and engines without
    such a row."""
    moe = spec.moe
    if moe is None:
        return 0.0
    kernel = moe_kernel(engine, device_class(stage.accelerator))
    if not kernel.layer_s and not kernel.expert_s:
        return 0.0
    clock = boost_clock_hz(stage.accelerator.id)
    scale = kernel.reference_hz / clock if kernel.reference_hz and clock else 1.0
    layers = (moe.num_moe_layers or spec.num_layers) * stage.layer_fraction
    experts = moe.num_experts / max(1, stage.ep) * touched
    return layers * (kernel.layer_s + kernel.expert_s * experts) * scale
