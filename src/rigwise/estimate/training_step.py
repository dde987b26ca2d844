"""Step time of a training run as named parts, for many layouts at once (numpy).

One optimizer step of a replica runs ``m = global_batch / (dp x micro_batch)`` microbatches
through ``pp`` stages. Time per microbatch on a stage = its layers' forward + backward (+
recompute) GEMMs at a shape-dependent efficiency, attention, memory-bound elementwise work,
tensor-parallel collectives and kernel overheads; the pipeline adds the 1F1B bubble
``(p-1)/v`` microbatch times (Narayanan et al. 2021, arXiv:2104.04473, Sec. 2.2) and p2p
sends; then the data-parallel gradient reduction (partly hidden under the last backward where
DDP/FSDP overlap it) and the optimizer step (memory-bound).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from rigwise.estimate.compute import TrainingFactors, gemm_seconds
from rigwise.estimate.training_comms import (
    Fabric,
    collective,
    context_parallel,
    data_parallel,
    expert_all_to_all,
    pipeline_p2p,
)
from rigwise.estimate.training_layout import Geometry, LayoutArrays, Workload
from rigwise.estimate.training_memory import activation_bytes_per_token
from rigwise.estimate.training_optimizer import offload_time, optimizer_time
from rigwise.hardware import Accelerator
from rigwise.plans import STEP_PARTS

__all__ = ["STEP_PARTS", "Fabric", "StepArrays", "estimate_step"]


@dataclass(frozen=True)
class StepArrays:
    """Step-time parts per layout; ``seconds`` is summed at its first use and kept."""

    parts: dict[str, np.ndarray]
    microbatches: np.ndarray
    recompute_flops_per_token: np.ndarray  # extra forward FLOPs of activation recompute

    @functools.cached_property
    def seconds(self) -> np.ndarray:
        return row_sums(list(self.parts.values()))


def row_sums(parts: list[np.ndarray]) -> np.ndarray:
    """Each layout's parts summed, the same whatever the number of layouts: summing across a
    stack (axis 0) adds a lone layout's parts pairwise (the stack is contiguous that way) but
    many layouts' in sequence, so a plan's step time differed in its last digits between
    planning it alone and in a batch or search (with 8 or more parts). Each row summed along
    its own contiguous row is added pairwise for any count."""
    total: np.ndarray = np.stack(parts, axis=1).sum(axis=1)
    return total


def _layer_gemms(geo: Geometry, tokens: np.ndarray, lay: LayoutArrays) -> list[tuple[Any, ...]]:
    """(forward FLOPs per GPU, m, n, k) of one layer's GEMM groups (Narayanan 2021 Eq. 3)."""
    h, a, k, d, tp = geo.hidden, geo.heads, geo.kv_heads, geo.head_dim, lay.tp
    qkv = (2 * tokens * h * (a + 2 * k) * d / tp, tokens, (a + 2 * k) * d / tp, h)
    out = (2 * tokens * a * d * h / tp, tokens, h, a * d / tp)
    dense_share = geo.dense_layers / geo.layers
    mlp = (2 * tokens * geo.mlp_params * dense_share / tp, tokens, geo.ffn / tp, h)
    groups = [qkv, out, mlp]
    if geo.moe_layers:
        width = geo.expert_params / (geo.mlp_matrices * h)
        routed = geo.experts_per_token * geo.expert_params + geo.shared_expert_params
        per_expert_tokens = tokens * geo.experts_per_token * lay.ep / geo.experts
        flops = 2 * tokens * routed * geo.moe_layers / geo.layers / tp
        groups.append((flops, np.maximum(per_expert_tokens, 1.0), width / tp, h))
    return groups


def _gemm_time(groups: list[tuple[Any, ...]], peak: float, eff: float, f: TrainingFactors) -> Any:
    return sum(gemm_seconds(fl, m, n, kk, peak, eff, f) for fl, m, n, kk in groups)


def _float8_casts(
    groups: list[tuple[Any, ...]], work: Workload, bw: float, f: TrainingFactors
) -> Any:
    """Seconds of the float8 scaling and casting of one layer's linears, forward + backward.

    Dynamic scaling reads each operand for its amax, then reads it again and writes the fp8
    copy (and a transposed copy for the other backward GEMM): traffic grows with the operands
    (m k + k n + m n) while the GEMM grows with m k n, so small GEMMs gain little or lose
    (torchao float8 README: 1024 x 2048 x 1024 runs at 0.80x of bf16, 4096 x 8192 x 16384 at
    1.39x on H100)."""
    if work.precision != "fp8":
        return 0.0
    elements = sum(m * kk + kk * n + m * n for _, m, n, kk in groups)
    return elements * f.float8_cast_bytes_per_element / bw


def _attention(
    geo: Geometry,
    work: Workload,
    lay: LayoutArrays,
    tokens: Any,
    acc: Accelerator,
    f: TrainingFactors,
) -> tuple[Any, Any]:
    """(forward, backward) seconds of QK^T and AV; flash skips the causal half, unfused not."""
    flops = 4.0 * tokens * work.seq_len * geo.heads * geo.head_dim / lay.tp
    peak = acc.peak_flops("bf16")
    if work.flash_attention:
        fwd = 0.5 * flops / (peak * f.attention_efficiency_flash)
        return fwd, 2.5 * fwd  # FA2 backward recomputes S = QK^T (Dao 2023 Sec. 3.1.2)
    fwd = flops / (peak * f.attention_efficiency_standard)
    return fwd, 2.0 * fwd


@dataclass(frozen=True)
class _Layer:
    """Per-layer, per-microbatch times of one stage (arrays over layouts)."""

    gemm_fwd: Any
    attn_fwd: Any
    attn_bwd: Any
    elem_fwd: Any
    bwd_factor: float  # backward GEMM work relative to forward (2, or 1 for a frozen base)
    traffic: float  # elementwise bytes per stored activation byte
    bandwidth: float  # achievable HBM bytes/s
    peak: float  # GEMM FLOP/s after any power cap


def _layer(
    geo: Geometry,
    work: Workload,
    lay: LayoutArrays,
    fabric: Fabric,
    f: TrainingFactors,
    tokens: Any,
) -> _Layer:
    acc = fabric.accelerator
    clock = fabric.clock_fraction(f)
    peak = acc.peak_flops(work.precision) * clock
    eff = f.matmul_efficiency(work.precision, work.float8_scaling)
    gemm_fwd = _gemm_time(_layer_gemms(geo, tokens, lay), peak, eff, f)
    attn_fwd, attn_bwd = _attention(geo, work, lay, tokens, acc, f)
    bw = acc.memory_bandwidth_bytes_per_s * f.memory_bandwidth_efficiency
    traffic = f.elementwise_traffic if work.fused_kernels else f.elementwise_traffic_unfused
    elem_fwd = traffic * activation_bytes_per_token(geo, work, lay) * tokens / bw
    elem_fwd = elem_fwd + _float8_casts(_layer_gemms(geo, tokens, lay), work, bw, f) / 3.0
    if work.method == "qlora":  # NF4 dequantisation reads the base weights in fwd, bwd
        elem_fwd = elem_fwd + geo.layer_params_total() / lay.tp * 2.5 / bw
    bwd_factor = 2.0 if work.trains_base else 1.0  # frozen base: activation gradients only
    return _Layer(
        gemm_fwd, attn_fwd / clock, attn_bwd / clock, elem_fwd, bwd_factor, traffic, bw, peak
    )


def _tensor_parallel(
    geo: Geometry,
    work: Workload,
    lay: LayoutArrays,
    fabric: Fabric,
    f: TrainingFactors,
    tokens: Any,
    t: _Layer,
) -> Any:
    """TP collectives of one layer per microbatch.

    Megatron TP: 2 all-reduces forward + 2 backward per layer (SP: the same volume as
    all-gather + reduce-scatter pairs; Korthikanti 2022 Sec. 4.2.2); full recompute redoes fwd;
    per-op SAC redoes the 2 forward all-gathers, whose outputs it does not save.
    """
    full = lay.recompute == 2
    op_sel = (lay.recompute == 1) & (work.selective_policy == "op")
    tp_ar = collective("ring_all_reduce", tokens * geo.hidden * 2.0, lay.tp, lay.tp, fabric, f)
    # A ring all-reduce is a reduce-scatter plus an all-gather of the same size. Float8 with
    # tensorwise scales casts before the all-gathers (inputs forward, output gradients
    # backward) and sends 1-byte elements; reduce-scatters stay bf16 (torchao Float8
    # ColwiseParallel / RowwiseParallel, used by torchtitan).
    fp8_gather = work.precision == "fp8" and work.float8_scaling == "tensorwise"
    gathers = (4.0 + 2.0 * full + 2.0 * op_sel) * (0.5 if fp8_gather else 1.0)
    tp_layer = tp_ar / 2.0 * (gathers + 4.0 + 2.0 * full)
    if not work.async_tp:
        return tp_layer
    # Collective matmul (Wang et al. 2023, ASPLOS; torchtitan AsyncTP) splits each collective
    # into tp chunks overlapped with the matmul of the previous chunk. Only part of the
    # collective time is hidden (async_tp_overlap): the first chunk stays exposed, the chunked
    # matmuls run slower, and the copies contend with them for HBM bandwidth.
    gemm_all = t.gemm_fwd * (1 + t.bwd_factor + full + _op_fraction(geo) * op_sel)
    return tp_layer - np.minimum(f.async_tp_overlap * tp_layer, gemm_all)


def _op_fraction(geo: Geometry) -> float:
    """Share of a layer's forward GEMM FLOPs that torchtitan per-op SAC recomputes.

    Its policy saves the output of every odd matmul of the layer and recomputes every second:
    of q, k, v, o, gate, up, down that is k, o and up (w3; w2 of a non-gated MLP)
    (torchtitan ``_custom_policy`` in ``apply_ac``).
    """
    h, a, k, d = geo.hidden, geo.heads, geo.kv_heads, geo.head_dim
    total = geo.layer_gemm_params_active()
    mlp_one = (total - geo.attention_params) / geo.mlp_matrices
    return float((h * k * d + a * d * h + mlp_one) / total)


def _recompute(geo: Geometry, work: Workload, lay: LayoutArrays, tokens: Any, t: _Layer) -> Any:
    """Full recompute redoes the layer's forward; selective the attention core (unfused
    attention: QK^T, softmax, dropout, AV with their s^2 traffic) or, with fused attention,
    the cheap elementwise ops (per-op SAC: also every second matmul, and the fused attention
    where its SDPA op is not in the save list: Workload.sac_saves_attention)."""
    full, sel = lay.recompute == 2, lay.recompute == 1
    recompute = np.where(full, t.gemm_fwd + t.attn_fwd + t.elem_fwd, 0.0)
    if not work.flash_attention:
        scores = (5.0 if work.dropout else 2.0) * geo.heads * work.seq_len / lay.tp
        scores_s = t.traffic * scores * tokens / t.bandwidth
        return recompute + np.where(sel, t.attn_fwd + scores_s, 0.0)
    if work.selective_policy == "op":
        attention = 0.0 if work.sac_saves_attention else t.attn_fwd
        op = _op_fraction(geo) * t.gemm_fwd + 0.5 * t.elem_fwd + attention
        return recompute + np.where(sel, op, 0.0)
    return recompute + np.where(sel, 0.5 * t.elem_fwd, 0.0)


def _recompute_flops_per_token(geo: Geometry, work: Workload, lay: LayoutArrays) -> Any:
    """Extra forward FLOPs per token of recompute (for HFU): full redoes every layer, selective
    the attention core when it is not fused, per-op SAC every second matmul (and the fused
    attention where its save list omits it)."""
    attention = 4.0 * work.seq_len * geo.heads * geo.head_dim * geo.layers
    gemm = 2.0 * geo.layer_gemm_params_active() * geo.layers
    selective = attention if not work.flash_attention else 0.0
    if work.selective_policy == "op":
        fused_redone = work.flash_attention and not work.sac_saves_attention
        selective = selective + _op_fraction(geo) * gemm + (attention if fused_redone else 0.0)
    return np.where(lay.recompute == 2, gemm + attention, 0.0) + np.where(
        lay.recompute == 1, selective, 0.0
    )


def estimate_step(
    geo: Geometry, work: Workload, lay: LayoutArrays, fabric: Fabric, f: TrainingFactors
) -> StepArrays:
    tokens = (lay.micro_batch * work.seq_len / lay.cp).astype(float)
    layers = np.ceil(geo.layers / lay.pp)
    t = _layer(geo, work, lay, fabric, f, tokens)
    logits = _logits_time(geo, work, lay, tokens, t.peak, f, t.bandwidth)
    per_mb = {
        "compute_s": layers * (t.gemm_fwd * (1 + t.bwd_factor) + t.attn_fwd + t.attn_bwd) + logits,
        "recompute_s": layers * _recompute(geo, work, lay, tokens, t),
        "memory_bound_s": layers * t.elem_fwd * 3.0,
        "tp_comm_s": layers * _tensor_parallel(geo, work, lay, fabric, f, tokens, t),
        "cp_comm_s": layers
        * context_parallel(geo, lay, tokens, t.attn_fwd + t.attn_bwd, fabric, f),
        "ep_comm_s": layers * expert_all_to_all(geo, lay, tokens, fabric, f),
        "overhead_s": layers * f.layer_overhead_s + 0.0 * tokens,
    }
    mb_time = row_sums(list(per_mb.values()))
    m = np.maximum(work.global_batch // (lay.dp * lay.micro_batch), 1).astype(float)
    parts = {name: value * m for name, value in per_mb.items()}
    parts["pp_bubble_s"] = (lay.pp - 1) / lay.vpp * mb_time
    p2p = pipeline_p2p(geo, lay, tokens, fabric, f)
    parts["pp_p2p_s"] = np.where(lay.pp > 1, 2.0 * lay.vpp * m * p2p, 0.0)
    bwd_last = layers * (t.gemm_fwd * t.bwd_factor + t.attn_bwd)
    parts["dp_comm_s"], parts["zero3_comm_s"] = data_parallel(
        geo, work, lay, fabric, f, bwd_last, mb_time, m
    )
    parts["optimizer_s"] = optimizer_time(geo, work, lay, t.bandwidth)
    parts["offload_s"] = offload_time(geo, work, lay, fabric, f, m)
    parts["overhead_s"] = parts["overhead_s"] + f.step_overhead_s
    ordered = {name: np.asarray(parts[name], dtype=float) + 0.0 * m for name in STEP_PARTS}
    extra = _recompute_flops_per_token(geo, work, lay)
    return StepArrays(parts=ordered, microbatches=m, recompute_flops_per_token=extra)


def _logits_time(
    geo: Geometry,
    work: Workload,
    lay: LayoutArrays,
    tokens: Any,
    peak: float,
    f: TrainingFactors,
    bw: float,
) -> Any:
    """Output projection fwd+bwd on the last stage, plus the vocab-parallel cross-entropy."""
    flops = 2.0 * tokens * geo.hidden * geo.vocab / lay.tp
    eff = f.matmul_efficiency(work.precision, work.float8_scaling)
    gemm = gemm_seconds(flops, tokens, geo.vocab / lay.tp, geo.hidden, peak, eff, f)
    loss = tokens * geo.vocab / lay.tp * 6.0 * 2.0 / bw
    return gemm * (3.0 if work.trains_base else 2.0) + loss
