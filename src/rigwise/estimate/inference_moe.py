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

from rigwise.estimate.elementwise import maximum, minimum
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


def partly_overlapped(moved: Any, worked: Any, unoverlapped: float) -> tuple[Any, Any]:
    """(bytes seconds, FLOPs seconds) of the routed experts' fused kernel when its weight
    streaming and its MMAs overlap only partly: the longer side grows by ``unoverlapped`` x the
    shorter, so the kernel's roofline (``inference.kernel_rooflines``) is max + share x min.
    vLLM's Triton fused_moe default config before PR #34846 (num_warps / num_stages not set;
    ``engine_builds.csv`` ``decode_moe_unoverlapped``, fitted on PR #24700's kernel timings)
    ran so; 0 (every current build): unchanged. Floats or arrays."""
    if not unoverlapped:
        return moved, worked
    extra = unoverlapped * minimum(moved, worked)
    bytes_bound = moved >= worked
    return moved + extra * bytes_bound, worked + extra * (1 - bytes_bound)


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


def _max_of_binomials(n: int, p: Any, ranks: int) -> Any:
    """E[max] of ``ranks`` independent Binomial(n, p): sum over t of 1 - F(t - 1)^ranks, the
    CDF built from the probability recursion (p at most 1/2, so the first term is not tiny)."""
    term = (1.0 - p) ** n
    cdf = term
    ratio = p / (1.0 - p)
    total: Any = 0.0
    for t in range(n):
        total = total + 1.0 - minimum(cdf, 1.0) ** ranks
        term = term * (n - t) / (t + 1) * ratio
        cdf = cdf + term
    return total


def _min_of_binomials(n: int, q: Any, ranks: int) -> Any:
    """E[min] of ``ranks`` independent Binomial(n, q), q at most 1/2: sum of P(X > u)^ranks."""
    term = (1.0 - q) ** n
    cdf = term
    ratio = q / (1.0 - q)
    total: Any = 0.0
    for u in range(n):
        total = total + maximum(1.0 - cdf, 0.0) ** ranks
        term = term * (n - u) / (u + 1) * ratio
        cdf = cdf + term
    return total


def busiest_rank_share(spec: ModelSpec, stage: Stage, touched: Any) -> Any:
    """Share of its routed experts the busiest expert-parallel rank of ``stage`` reads in a
    decode step that touches each expert with probability ``touched``
    (``inference.touched_share``). The ranks meet at every MoE layer's combine (an all-reduce
    or an all-to-all), so the layer lasts as long as its busiest rank (load balance across EP
    ranks: DeepSeek-V3 report Sec. 3.4, deepseek-ai/EPLB). A rank holds n = E / ep experts;
    its touched ones are taken as Binomial(n, touched) (experts independent; at one token,
    k = 8 of 160 experts on 4 ranks, E[max] 3.46 against 3.49 for the exact draw), and the
    busiest of ep ranks reads E[max] / n of its experts: 1.73 x the mean at that one token,
    1.14 x at 16 tokens, 1.00 once every expert is touched. ``touched`` itself without expert
    parallelism (every device holds a slice of every expert). Uniform routing, as
    ``touched_share``: real routers are less even, so this is the least the busiest rank reads."""
    moe = spec.moe
    ranks = max(1, stage.ep)
    if moe is None or ranks == 1 or moe.num_experts < ranks:
        return touched
    n = moe.num_experts // ranks
    low = _max_of_binomials(n, minimum(touched, 0.5), ranks) / n
    high = 1.0 - _min_of_binomials(n, 1.0 - maximum(touched, 0.5), ranks) / n
    if isinstance(touched, int | float):
        return low if touched <= 0.5 else high
    import numpy as np

    return np.where(np.asarray(touched) <= 0.5, low, high)
