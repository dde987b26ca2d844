"""Serving layouts: replicas (dp) of a tp x pp layout with expert parallel (ep) and attention
data parallel (attention_dp) inside tp; the engine rules they must obey; the running batch
and queue of a deployment, with the memory its running batch fills.

Inside one tensor-parallel group of ``tp`` devices, MoE engines (SGLang ``--enable-dp-attention
--ep-size``, vLLM ``--data-parallel-size --enable-expert-parallel``, TensorRT-LLM
``enable_attention_dp``) run attention as ``attention_dp`` independent ranks of
``tp / attention_dp`` devices, each with its own requests and KV cache, and shard the routed
experts over ``ep`` ranks; see ``inference_memory.device_weight_bytes`` and
``stage_kv_split`` for the memory, ``inference._tp_comm`` for the all-to-all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

from rigwise.errors import InputError
from rigwise.estimate.engine_overheads import EngineOverheads
from rigwise.estimate.engine_rules import (
    Violation,
    engine_defaults,
    layout_violation,
    violation,
)
from rigwise.estimate.inference import Context, Phase
from rigwise.estimate.inference_memory import MemoryBreakdown
from rigwise.estimate.inference_stages import Stage, build_stages, group_count
from rigwise.estimate.serving import ServingEstimate, serve_plan
from rigwise.hardware import Accelerator, Cluster, Link
from rigwise.models import ModelSpec


@dataclass(frozen=True)
class ReplicaLayout:
    """How one model copy is laid out and how many copies serve."""

    tp: int | None = None
    pp: int | None = None
    dp: int = 1
    ep: int = 1
    attention_dp: int = 1


def _check_inside_tp(layout: ReplicaLayout, width: int) -> None:
    for name, value in (("--ep", layout.ep), ("--attention-dp", layout.attention_dp)):
        if value > 1 and width % value:
            raise InputError(
                f"{name} {value} does not divide the tensor-parallel group of {width} devices.",
                hint=f"Use {name} that divides --tp (e.g. {name} {width}).",
            )


# The engine whose head rules the dense --ep hint keeps to, before a plan's engine is known:
# vLLM's rows are SGLang's and TensorRT-LLM's too (engine_rules.csv tp-divides-attention-heads,
# tp-kv-heads).
_SHARDING_ENGINE = "vllm"


def check_expert_parallel(
    spec: ModelSpec,
    ep: int,
    name: str = "--ep",
    tp_name: str = "--tp",
    devices: int = 0,
    cluster: Cluster | None = None,
) -> None:
    """Expert parallel shards routed experts: a dense model has none, so ``ep`` > 1 would be
    ignored without a word (the plan the same as without it). The hint's tensor-parallel size
    is ``ep`` held to the devices there are (``devices``, 0: not known; or the ``cluster``'s),
    to a size that splits the heads as vLLM, SGLang and TensorRT-LLM shard them (engine rules
    tp-divides-attention-heads and tp-kv-heads) and, given the ``cluster`` a plan runs on, to
    one its nodes take (a size that divides each node's devices or spans whole nodes)."""
    if ep > 1 and spec.moe is None:
        devices = cluster.accelerator_count if cluster is not None else devices
        most = min(ep, devices) if devices > 0 else ep
        tp = next(
            t
            for t in range(most, 0, -1)
            if t == 1
            or (
                layout_violation(_SHARDING_ENGINE, spec, t) is None
                and (cluster is None or _rig_takes(cluster, t))
            )
        )
        hint = f"Drop {name}, or use {tp_name} {tp} to split the model over {tp} devices."
        if tp == 1:  # on more devices, no tensor-parallel size both the engine and rig take
            hint = f"Drop {name}; one device holds the whole model." if devices == 1 else (
                f"Drop {name}."
            )  # fmt: skip
        raise InputError(
            f"{name} {ep} asks for expert parallel, but {spec.name} is a dense model (no experts).",
            hint=hint,
        )


def _rig_takes(cluster: Cluster, tp: int) -> bool:
    """Whether the cluster's nodes take tensor-parallel groups of ``tp`` (inference_stages)."""
    try:
        group_count(cluster, "tensor", tp)
    except InputError:
        return False
    return True


def replica_stages(
    cluster: Cluster,
    split: str,
    layout: ReplicaLayout,
    overheads_for: Callable[[Accelerator], EngineOverheads],
    max_stages: int | None = None,
) -> tuple[Stage, ...]:
    """The stages of one replica; ``layout.dp`` replicas must fit in the cluster.
    ``max_stages`` bounds the pipeline (a stage holds at least one layer)."""
    pp = layout.pp
    if layout.dp > 1:
        groups = group_count(cluster, split, layout.tp)
        pp = pp or max(1, groups // layout.dp)
        if pp * layout.dp > groups:
            _too_few_groups(cluster, layout.dp, pp, groups)
    stages = build_stages(
        cluster, split, layout.tp, pp, overheads_for, max_stages, layout.attention_dp, layout.ep
    )
    _check_inside_tp(layout, stages[0].tp)
    return stages


def _too_few_groups(cluster: Cluster, dp: int, pp: int, groups: int) -> NoReturn:
    total = cluster.accelerator_count
    width = total // max(1, groups)
    hint = "Lower --dp, --tp or --pp, or add devices (--on 'Nx GPU', --nodes)."
    if dp * pp * width > total:
        need = f"--dp {dp} replicas of tp {width} x pp {pp} need {dp * pp * width} devices"
        raise InputError(f"{need}; {total} given.", hint=hint)
    # nodes of different sizes: as many devices as asked for, but fewer groups ("need 3
    # devices; 3 given" on rtx-4090 + 2x rtx-3090, a group a node)
    raise InputError(
        f"--dp {dp} replicas x pp {pp} need {dp * pp} tensor-parallel groups; these "
        f"{total} devices make {groups} (a group a node).",
        hint="Give --tp 1 (a replica or stage a device), or lower --dp or --pp.",
    )


def check_rules(
    engine: str, spec: ModelSpec, stages: tuple[Stage, ...], quant: str
) -> Violation | None:
    """The engine rule this layout breaks (engine_rules.csv), if any."""
    return violation(
        engine,
        spec,
        [s.accelerator for s in stages],
        quant,
        [s.attention_tp for s in stages if s.tp > 1] or [1],
    )


def engine_context(engine: str, stages: tuple[Stage, ...], wanted: int, most: int) -> int:
    """The context the engine reserves when none is given: Ollama's own default by VRAM
    (engine_defaults.csv), never less than the request, never more than the model takes."""
    found = engine_defaults(engine, stages[0].accelerator.memory_bytes).default_context
    return max(wanted, min(found, most)) if found else wanted


def auto_offload(engine: str, stages: tuple[Stage, ...]) -> bool:
    """Whether the engine moves layers to system RAM by itself (Ollama)."""
    return engine_defaults(engine, stages[0].accelerator.memory_bytes).auto_offload


def serve_with_queue(
    ctx: Context,
    stages: tuple[Stage, ...],
    network: Link | None,
    memory_for: Callable[[float], MemoryBreakdown],
    request: tuple[int | str, int, int, int],
    prefill: Phase,
    max_batch: int | None,
    replicas: int,
) -> tuple[ServingEstimate, MemoryBreakdown]:
    """Serving figures and the memory of the running batch. ``request`` is (concurrency,
    prompt, gen, context); ``memory_for(kv_bytes)`` is the memory with that much KV cache."""
    concurrency, prompt, gen, context = request
    free = memory_for(0.0)
    serving = serve_plan(
        ctx, stages, free, network, concurrency, (prompt, gen, context), prefill, max_batch,
        replicas,
    )  # fmt: skip
    per_request = ctx.spec.kv_cache_bytes(context, ctx.kv_dtype)
    return serving, memory_for(per_request * max(1, serving.running_batch))
