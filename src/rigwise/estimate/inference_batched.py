"""Batched costs for serving: one continuous-batching decode step of many sequences and the
prefill cost per prompt token when many prompts share a step. Split from ``inference`` (one
request's prefill and decode), whose per-stage parts these reuse.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from rigwise.estimate.elementwise import maximum
from rigwise.estimate.inference import (
    Context,
    _tp_comm,
    decode_stage_parts,
    hop_seconds,
)
from rigwise.estimate.inference_factors import stage_factors
from rigwise.estimate.inference_moe import expert_gemm_factor
from rigwise.estimate.inference_stages import Stage
from rigwise.estimate.model_memo import flops_parts
from rigwise.hardware import Link

# (stage, batch) -> decode_stage_parts(ctx, stage, context, batch, kernels=True) of one replica
StageParts = Callable[[Stage, int], dict[str, float]]


def decode_step_seconds(
    ctx: Context,
    stages: tuple[Stage, ...],
    network: Link | None,
    context: int,
    batch: int,
    parts_of: StageParts | None = None,
) -> float:
    """One continuous-batching step of ``batch`` sequences (serving): per stage its GEMMs' and
    its attention's rooflines added (``inference.kernel_rooflines``), plus overheads: the
    engine's host work per step (``engine_overheads.csv`` ``step_overhead_us``, one sequence)
    and per further running sequence (``sequence_overhead_us``), on the step's critical path.

    Pipelined engines split the batch into one micro-batch per stage and keep every stage
    busy: a stage runs its layers once per micro-batch, so its weights are read ``pp`` times
    per step (pipeline parallelism adds KV capacity, not weight bandwidth; Narayanan et al.
    2021 Sec. 2.2). vLLM V0 ran one virtual engine per stage (vllm-project/vllm RFC #4461);
    V1 keeps a queue of ``pp`` batches in flight, each of requests the others do not hold
    (PR #13064: ``max_concurrent_batches`` = PP size, a request is not scheduled again until
    its output returns). For an MoE a micro-batch of B / pp sequences reads only the experts
    its tokens touch (``inference.touched_share``). Others (llama.cpp) run the stages in turn.
    ``parts_of``: the stages' parts at ``context`` from a caller that keeps them (serving asks
    for the same batch's step and compute bound); by default computed here.
    """
    pipelined = ctx.overheads.pipelined_serving and len(stages) > 1
    micro = -(-batch // len(stages)) if pipelined else batch
    times = []
    for stage in stages:
        if parts_of is None:
            p = decode_stage_parts(ctx, stage, context, micro, kernels=True)
        else:
            p = parts_of(stage, micro)
        roof = p["memory_bandwidth"] + p["compute"]  # kernel rooflines, already per kernel
        overheads = p["kernel_overhead"] + p.get("gemm_tiles", 0.0)  # gemm_tiles: older builds
        times.append(roof + p["host_offload"] + overheads + p["tensor_parallel_comm"])
    hops = hop_seconds(ctx, stages, network, micro)
    hops += (len(stages) - 1) * ctx.overheads.layer_hop_overhead_s
    hops += ctx.overheads.step_overhead_s  # the engine's host work per step, once per step
    # and per running sequence beyond the first (the step overhead was fitted at batch 1): the
    # scheduler, input preparation and output processing loop over every sequence of the step
    hops += (batch - 1) * ctx.overheads.sequence_overhead_s
    step_s: float = len(stages) * functools.reduce(maximum, times) if pipelined else sum(times)
    return step_s + hops


class ReplicaSteps:
    """The decode steps of one replica laid out as ``stages``, at ``context`` tokens. A serving
    estimate asks for the same batch's step more than once (its running batch, batch 1, which
    roofline bounds it): each stage's parts and each batch's step are computed once (pure
    functions of the batch), the same numbers as ``decode_step_seconds`` gives."""

    def __init__(
        self, ctx: Context, stages: tuple[Stage, ...], network: Link | None, context: int
    ) -> None:
        self.ctx, self.stages, self.network, self.context = ctx, stages, network, context
        self._parts: dict[tuple[int, int], dict[str, float]] = {}  # (id of a stage, batch)
        self._steps: dict[int, float] = {}

    def parts(self, stage: Stage, batch: int) -> dict[str, float]:
        """``decode_stage_parts`` of one of the stages (kernel rooflines), kept."""
        key = (id(stage), batch)  # the stages are held by self: their ids stay theirs
        found = self._parts.get(key)
        if found is None:
            found = decode_stage_parts(self.ctx, stage, self.context, batch, kernels=True)
            self._parts[key] = found
        return found

    def step(self, batch: int) -> float:
        """``decode_step_seconds`` at ``batch``, kept."""
        found = self._steps.get(batch)
        if found is None:
            found = decode_step_seconds(
                self.ctx, self.stages, self.network, self.context, batch, self.parts
            )
            self._steps[batch] = found
        return found

    def compute_bound(self, batch: int) -> bool:
        """Whether the first stage's kernels at ``batch`` take longer on FLOPs than on bytes."""
        first = self.parts(self.stages[0], batch)
        return first["compute"] > first["memory_bandwidth"]


def prefill_seconds_per_token_batched(
    ctx: Context, stages: tuple[Stage, ...], prompt: int
) -> float:
    """Prefill cost per prompt token when many prompts are batched (serving): the GEMMs and the
    attention at their reached peaks, and under tensor parallelism the two all-reduces of each
    token's hidden state per layer (Megatron-LM Sec. 3), paid per step of ``workspace_tokens``
    (TensorRT-LLM and vLLM run them after the GEMMs, not overlapped, by default)."""
    total = 0.0
    chunk = max(1, ctx.overheads.workspace_tokens)
    matmul_flops, attention_flops = flops_parts(ctx.spec, max(1, prompt // 2))
    for stage in stages:
        factors = stage_factors(ctx, stage)
        eff, peak = factors.eff, factors.peak
        share = stage.layer_fraction / stage.tp
        seconds = matmul_flops * share / (peak * eff.serving_compute_efficiency)
        seconds *= expert_gemm_factor(
            ctx.spec, stage, ctx.overheads.workspace_tokens, matmul_flops
        )  # a full step of prompt tokens
        attention_peak = factors.attention_peak
        seconds += attention_flops * share / (attention_peak * eff.prefill_attention_efficiency)
        seconds += _tp_comm(ctx, stage, chunk) / chunk  # two all-reduces per layer per token
        total = max(total, seconds) if ctx.overheads.pipelined_serving else total + seconds
    return total
