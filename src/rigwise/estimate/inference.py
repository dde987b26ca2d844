"""Inference speed: prefill and decode of one request over a layout of pipeline stages.

Roofline per stage (Williams, Waterman & Patterson 2009): a step takes the longer of its bytes
over the reached bandwidth and its FLOPs over the reached compute, plus per-layer launch
overhead and communication. Decode at batch 1 is memory-bound: every active weight and the KV
cache are read once per token (Pope et al. 2022, "Efficiently Scaling Transformer Inference",
Sec. 2). Prefill is compute-bound: ``flops_per_token`` over the prompt (Kaplan et al. 2020).
Layer split runs stages in turn, so their times add; tensor parallel pays two all-reduces of
the hidden state per layer (Shoeybi et al. 2019, Megatron-LM Sec. 3). The share of the peak
reached is data per engine x device class x quant kernel (``estimate.inference_efficiency``),
looked up once per stage of a setup (``estimate.inference_factors``). The batched and MoE
parts live in their own modules."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from rigwise.estimate import comms
from rigwise.estimate.collective_latency import collective_link
from rigwise.estimate.elementwise import maximum
from rigwise.estimate.engine_overheads import EngineOverheads
from rigwise.estimate.gemm_tiles import tiles_beyond_roofline
from rigwise.estimate.identity_memo import IdentityMemo
from rigwise.estimate.inference_efficiency import Efficiency
from rigwise.estimate.inference_factors import stage_factors
from rigwise.estimate.inference_memory import expert_weight_share, stage_kv_split
from rigwise.estimate.inference_moe import (
    busiest_rank_share,
    expert_gemm_factor,
    moe_kernel_seconds,
    partly_overlapped,
    routed_expert_flops_per_token,
)
from rigwise.estimate.inference_stages import Stage
from rigwise.estimate.model_memo import flops_parts, kv_bytes, memoised
from rigwise.hardware import Link
from rigwise.models import ModelSpec
from rigwise.serialize import JsonObject

_ACTIVATION_BYTES = 2  # hidden states travel between devices in fp16/bf16


@dataclass(frozen=True)
class Phase(JsonObject):
    """Prefill or decode: a rate, its time, what bounds it, and the named parts of the time.
    Its JSON: these fields (a decode's ``seconds`` is named ``seconds_per_token`` there)."""

    tokens_per_s: float
    seconds: float  # prefill: the whole prompt; decode: one token
    bound: str
    parts: Mapping[str, float]


@dataclass(frozen=True)
class Context:
    """Everything a stage estimate needs besides the stage itself."""

    spec: ModelSpec
    engine: str
    quant: str
    kv_dtype: str
    weights_bytes: float
    overheads: EngineOverheads
    offload_efficiency: Efficiency | None
    calibration: Mapping[str, float] | None
    engine_build: str | None = None  # an older build's kernels (engine_builds.csv); None: current
    max_sequences: int | None = None  # the user's cap on running requests (vLLM --max-num-seqs)


def touched_share(ctx: Context, batch: int) -> float:
    """Share of the routed experts a step of ``batch`` tokens reads: with k of E experts per
    token, E(1-(1-k/E)^B) experts in expectation (uniform routing; Fedus et al. 2022)."""
    moe = ctx.spec.moe
    return 1.0 - (1.0 - moe.experts_per_token / moe.num_experts) ** batch if moe else 0.0


class WeightReads(NamedTuple):
    """Weight bytes one step reads for one device of a stage, by where they live (a named
    tuple: made several times per plan, and a frozen dataclass costs more to make)."""

    device_dense: float
    device_experts: float
    host: float


def weight_reads(ctx: Context, stage: Stage, batch: int) -> WeightReads:
    """Offloaded weights are routed experts first (llama.cpp --cpu-moe / -ot exps=CPU), so a
    MoE reads from host RAM only the experts its tokens route to; then dense layers. On the
    device, the busiest expert-parallel rank's share of its experts (``busiest_rank_share``):
    the step waits for it at every MoE layer."""
    total = ctx.weights_bytes * stage.layer_fraction
    experts = total * expert_weight_share(ctx.spec)
    offloaded = total * stage.offloaded_fraction
    off_experts = min(offloaded, experts)
    off_dense = offloaded - off_experts
    touched = touched_share(ctx, batch)
    return WeightReads(
        device_dense=(total - experts - off_dense) / stage.attention_tp,
        device_experts=(experts - off_experts)
        * busiest_rank_share(ctx.spec, stage, touched)
        / stage.tp,
        host=(off_dense + off_experts * touched) * stage.tp,
    )


def read_weight_bytes(ctx: Context, batch: int) -> tuple[float, float]:
    """Whole-model weight bytes one step reads: (dense part, routed experts touched)."""
    share = expert_weight_share(ctx.spec)
    touched = touched_share(ctx, batch)
    return ctx.weights_bytes * (1.0 - share), ctx.weights_bytes * share * touched


def _tp_comm(ctx: Context, stage: Stage, tokens: float) -> float:
    """Two all-reduces of the hidden state per layer under tensor parallelism (Megatron-LM);
    with expert parallelism the MoE layers' all-reduce becomes a dispatch and a combine
    all-to-all of each token's hidden state to its k experts' ranks (DeepSeek-V3 report
    Sec. 3.4; DeepEP), and attention-DP ranks all-reduce only among their attention_tp."""
    if stage.tp == 1 or stage.intra_link is None:
        return 0.0
    intra = stage.intra_link
    layers = ctx.spec.num_layers * stage.layer_fraction
    size = tokens * ctx.spec.hidden_size * _ACTIVATION_BYTES
    moe = ctx.spec.moe
    if stage.ep == 1 or moe is None:
        # NCCL's step latency and ring bandwidth for a group of tp (collective_latency.csv)
        link = collective_link(intra, stage.tp)
        return 2 * comms.ring_all_reduce(size, stage.tp, link).seconds * layers
    attention = 0.0
    if stage.attention_tp > 1:
        rank_size = size / stage.attention_dp
        link = collective_link(intra, stage.attention_tp)
        attention = comms.ring_all_reduce(rank_size, stage.attention_tp, link).seconds
    moe_layers = min(layers, (moe.num_moe_layers or ctx.spec.num_layers) * stage.layer_fraction)
    per_device = size / stage.tp * moe.experts_per_token
    exchange = 2 * comms.all_to_all(per_device, stage.ep, collective_link(intra, stage.ep)).seconds
    return attention * layers + exchange * moe_layers


def _host_seconds(ctx: Context, stage: Stage, host_bytes: float) -> float:
    """Offloaded weights are read by the host CPU at its RAM bandwidth."""
    if not stage.offloaded_fraction or not stage.host_bandwidth_bytes_per_s:
        return 0.0  # nothing offloaded (also when host_bytes is an array of zeros)
    eff = ctx.offload_efficiency.decode_bandwidth_efficiency if ctx.offload_efficiency else 1.0
    return host_bytes / (stage.host_bandwidth_bytes_per_s * eff)


def _prefill_host_seconds(ctx: Context, stage: Stage, prompt: int) -> float:
    """``_host_seconds`` of a prompt's weight reads; its reads made only where some weights
    are offloaded (it is 0 otherwise: most plans)."""
    if not stage.offloaded_fraction:
        return 0.0
    return _host_seconds(ctx, stage, weight_reads(ctx, stage, prompt).host)


def kernel_rooflines(*kernels: tuple[Any, Any]) -> tuple[Any, Any]:
    """(memory-bound, compute-bound) seconds of kernels that run one after another, each given
    as (bytes / bandwidth, FLOPs / peak): each kernel takes the longer of its two (roofline per
    kernel), and the kernels add. A decode step's weight GEMMs and its attention are separate
    kernels (FlashAttention / XQA read the KV cache, cuBLAS the weights), so at a large batch
    compute-bound GEMMs do not hide the memory-bound attention (Pope et al. 2022 Sec. 2;
    Sarathi-Serve, Agrawal et al. 2024, Sec. 2.3: decode attention stays memory-bound)."""
    memory: Any = 0.0
    compute: Any = 0.0
    for moved, worked in kernels:
        longer = maximum(moved, worked)
        memory = memory + longer * (moved >= worked)
        compute = compute + longer * (moved < worked)
    return memory, compute


def kernel_sums(*kernels: tuple[Any, Any]) -> tuple[Any, Any]:
    """(all seconds of bytes, all seconds of FLOPs) of ``kernels``, one roofline for them all
    (added in order from 0, as ``sum`` does; a loop: two generators cost more, per step)."""
    moved: Any = 0
    worked: Any = 0
    for kernel_moved, kernel_worked in kernels:
        moved = moved + kernel_moved
        worked = worked + kernel_worked
    return moved, worked


class BatchCosts(NamedTuple):
    """What a decode step of a batch costs one stage at any context: its weight reads (dense
    and routed experts, seconds at the reached bandwidth), host RAM reads of offloaded
    weights, launch and MoE kernel overhead, tensor-parallel communication."""

    dense_s: Any
    experts_s: Any
    host_s: Any
    kernel_overhead_s: Any
    tensor_parallel_s: Any


_STEPS: IdentityMemo[BatchCosts] = IdentityMemo()  # per (context, stage) objects and batch


def _batch_costs(ctx: Context, stage: Stage, batch: int) -> BatchCosts:
    factors = stage_factors(ctx, stage)
    eff, dequant = factors.eff, factors.dequant
    reads = weight_reads(ctx, stage, batch)
    bandwidth = stage.accelerator.memory_bandwidth_bytes_per_s * eff.decode_bandwidth_efficiency
    touched = busiest_rank_share(ctx.spec, stage, touched_share(ctx, batch))
    return BatchCosts(
        dense_s=reads.device_dense * dequant / bandwidth,
        experts_s=reads.device_experts * dequant / (bandwidth * eff.moe_expert_efficiency),
        host_s=_host_seconds(ctx, stage, reads.host),
        kernel_overhead_s=factors.launch_s
        + moe_kernel_seconds(ctx.spec, ctx.engine, stage, touched),
        tensor_parallel_s=_tp_comm(ctx, stage, batch),
    )


def decode_stage_parts(
    ctx: Context, stage: Stage, context: int, batch: int, kernels: bool = False
) -> dict[str, float]:
    """Named seconds of one decode step of ``batch`` sequences at ``context`` tokens, one stage.
    ``kernels``: memory and compute are already the weight GEMMs' and the attention's own
    rooflines (``kernel_rooflines``: add them; the batched serving step); otherwise they are the
    step's bytes and FLOPs (the caller keeps the longer: batch-1 decode, whose
    decode_compute_efficiency was fitted that way on llama.cpp rows)."""
    factors = stage_factors(ctx, stage)
    eff, dequant = factors.eff, factors.dequant  # unfused dequant kernels move more bytes
    acc = stage.accelerator
    if type(batch) is int:  # the same at every context: kept (a search's arrays are not)
        step = _STEPS.get((ctx, stage), batch, lambda: _batch_costs(ctx, stage, batch))
    else:
        step = _batch_costs(ctx, stage, batch)
    dense, experts = step.dense_s, step.experts_s
    kv = batch * kv_bytes(ctx.spec, context, ctx.kv_dtype) * stage.layer_fraction
    kv /= stage_kv_split(ctx.spec, stage)
    bandwidth = acc.memory_bandwidth_bytes_per_s * eff.decode_bandwidth_efficiency
    cache = kv / (acc.memory_bandwidth_bytes_per_s * eff.decode_kv_bandwidth_efficiency)
    matmul, attention = flops_parts(ctx.spec, context)
    single = batch == 1  # a bool, or a bool array when a search passes batches as an array
    compute_eff = eff.serving_compute_efficiency + single * (
        eff.decode_compute_efficiency - eff.serving_compute_efficiency
    )
    share = batch * stage.layer_fraction / stage.tp
    peak, grouped = factors.peak, factors.grouped
    per_flop = share / (peak * compute_eff)
    if grouped:  # the routed experts' grouped GEMMs are their own kernels, at their own reach
        expert_flops = routed_expert_flops_per_token(ctx.spec)
        gemms = [
            (dense, (matmul - expert_flops) * per_flop),
            partly_overlapped(
                experts, expert_flops * share / (peak * grouped), factors.moe_unoverlapped * kernels
            ),
        ]
    else:
        gemms = [(dense + experts, matmul * per_flop)]
    kernel_list = (*gemms, (cache, attention * per_flop))
    memory, compute = kernel_rooflines(*kernel_list) if kernels else kernel_sums(*kernel_list)
    parts = {
        "memory_bandwidth": memory,
        "compute": compute,
        "host_offload": step.host_s,
        "kernel_overhead": step.kernel_overhead_s,
        "tensor_parallel_comm": step.tensor_parallel_s,
    }
    if factors.tiles is not None:  # an older build's whole tiles beyond those GEMMs' roofline
        flop_s = 1.0 / (peak * compute_eff)
        parts["gemm_tiles"] = tiles_beyond_roofline(
            factors.tiles, batch, bandwidth, dequant, flop_s
        )
    return parts


def prefill_stage_parts(ctx: Context, stage: Stage, prompt: int) -> dict[str, float]:
    """Named seconds to process a ``prompt``-token prompt through one stage."""
    factors = stage_factors(ctx, stage)
    eff, build = factors.eff, factors.build
    acc = stage.accelerator
    matmul_flops, attention_flops = flops_parts(ctx.spec, max(1, prompt // 2))  # causal: half
    share = stage.layer_fraction / stage.tp
    matmul = prompt * matmul_flops * share / (factors.reached * build.prefill_speed_scale)
    matmul *= expert_gemm_factor(
        ctx.spec, stage, min(prompt, ctx.overheads.workspace_tokens), matmul_flops
    )
    attention_peak = factors.attention_peak * build.prefill_speed_scale
    attention = (
        prompt * attention_flops * share / (attention_peak * eff.prefill_attention_efficiency)
    )
    chunks = -(-prompt // ctx.overheads.workspace_tokens)  # weights are re-read per micro-batch
    weights = ctx.weights_bytes * share * (1.0 - stage.offloaded_fraction)
    bandwidth = acc.memory_bandwidth_bytes_per_s * eff.decode_bandwidth_efficiency
    parts = {
        "compute": max(matmul, chunks * weights / bandwidth),
        "attention": attention,
        "host_offload": chunks * _prefill_host_seconds(ctx, stage, prompt),
        "tensor_parallel_comm": _tp_comm(ctx, stage, prompt),
    }
    if build.dequant_gemm:  # an older build's pass: read the quantized weights, write fp16 ones
        fp16 = memoised("f16", ctx.spec, 0, "", lambda: ctx.spec.weights_bytes("f16")) * share
        parts["dequantization"] = (
            chunks * (weights + fp16 * (1 - stage.offloaded_fraction)) / bandwidth
        )
    return parts


def hop_link(stages: tuple[Stage, ...], index: int, network: Link | None) -> Link | None:
    """The link between stage ``index`` and the next: intra-node, or the cluster network."""
    here, there = stages[index], stages[index + 1]
    return here.intra_link if here.node_index == there.node_index else network


def hop_seconds(
    ctx: Context, stages: tuple[Stage, ...], network: Link | None, tokens: int
) -> float:
    """Passing ``tokens`` hidden states across every stage boundary (p2p: latency + size / bw)."""
    total = 0.0
    for index in range(len(stages) - 1):
        link = hop_link(stages, index, network)
        if link is not None:
            size = tokens * ctx.spec.hidden_size * _ACTIVATION_BYTES
            total += comms.p2p(size, link).seconds
    return total


_BOUNDS = {
    "memory_bandwidth": "memory bandwidth",
    "compute": "compute",
    "attention": "attention compute",
    "dequantization": "weight dequantization (older build)",
    "host_offload": "host RAM bandwidth (offloaded layers)",
    "kernel_overhead": "kernel launch overhead",
    "gemm_tiles": "whole GEMM tiles at a small batch (older build's FP8 kernel)",
    "tensor_parallel_comm": "tensor-parallel all-reduce",
    "stage_hops": "transfers between devices/nodes",
    "engine_hop_overhead": "synchronisation between devices",
    "engine_step_overhead": "engine host work per step (scheduling, sampling)",
}


def _bound(parts: Mapping[str, float]) -> str:
    return _BOUNDS.get(max(parts, key=parts.__getitem__), "compute")


def _combine(per_stage: list[dict[str, float]]) -> dict[str, float]:
    total: dict[str, float] = {}
    for parts in per_stage:
        for key, value in parts.items():
            total[key] = total.get(key, 0.0) + value
    return total


def decode_phase(
    ctx: Context, stages: tuple[Stage, ...], network: Link | None, context: int
) -> Phase:
    """Decode at batch 1: stages in turn; each is the longer of memory and compute + overheads."""
    per_stage = [decode_stage_parts(ctx, s, context, 1) for s in stages]
    for parts in per_stage:  # roofline: overlap memory and compute, keep the longer
        longer = max(parts["memory_bandwidth"], parts["compute"])
        parts["memory_bandwidth"], parts["compute"] = (
            (longer, 0.0) if parts["memory_bandwidth"] >= parts["compute"] else (0.0, longer)
        )
    parts = _combine(per_stage)
    parts["stage_hops"] = hop_seconds(ctx, stages, network, 1)
    parts["engine_hop_overhead"] = (len(stages) - 1) * ctx.overheads.layer_hop_overhead_s
    parts["engine_step_overhead"] = ctx.overheads.step_overhead_s
    seconds = sum(parts.values())
    return Phase(1.0 / seconds, seconds, _bound(parts), parts)


def pipeline_factor(stage_seconds: list[float], prompt: int, overheads: EngineOverheads) -> float:
    """Share of the summed stage times a prompt takes when its micro-batches pipeline.

    C micro-batches flow through the stages in groups of ``prefill_pipeline_tokens`` (B groups):
    a group of c micro-batches takes sum(s) + (c - 1) max(s) (GPipe, Huang et al. 2019), so the
    prompt takes (B sum(S) + (C - B) max(S)) / C for whole-prompt stage times S."""
    total = sum(stage_seconds)
    if len(stage_seconds) < 2 or not overheads.prefill_pipeline_tokens or total <= 0:
        return 1.0
    chunks = -(-prompt // overheads.workspace_tokens)
    groups = -(-prompt // overheads.prefill_pipeline_tokens)
    return (groups * total + (chunks - groups) * max(stage_seconds)) / (chunks * total)


def prefill_phase(
    ctx: Context, stages: tuple[Stage, ...], network: Link | None, prompt: int
) -> Phase:
    """Prefill of one prompt: compute-bound per stage, stages pipelined by micro-batch where
    the engine does it, plus hop transfers and per-hop synchronisation."""
    per_stage = [prefill_stage_parts(ctx, s, prompt) for s in stages]
    factor = pipeline_factor([sum(p.values()) for p in per_stage], prompt, ctx.overheads)
    parts = {key: value * factor for key, value in _combine(per_stage).items()}
    groups = -(-prompt // (ctx.overheads.prefill_pipeline_tokens or prompt))
    parts["stage_hops"] = hop_seconds(ctx, stages, network, prompt)
    parts["engine_hop_overhead"] = (len(stages) - 1) * groups * ctx.overheads.prefill_hop_overhead_s
    seconds = sum(parts.values())
    return Phase(prompt / seconds, seconds, _bound(parts), parts)
