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

from rigwise.estimate.inference_memory import Stage, routed_expert_matrices
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
