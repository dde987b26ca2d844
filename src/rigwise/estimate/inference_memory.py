"""Memory of an inference deployment, per device: weights, KV cache, workspace, engine overhead.

The layout is a list of ``Stage``s: a pipeline stage is ``tp`` identical devices of one node
holding ``layer_fraction`` of the layers (layer split = one device per stage; tensor parallel =
a whole node per stage). Engine reservations (CUDA context, vLLM's memory fraction, llama.cpp's
compute buffer) come from ``catalog/data/engine_overheads.csv``; Apple's GPU wired-memory limit
from ``apple_memory_limits.csv``. Nothing here hard-codes a spec.

Over 400 lines on purpose: every term of one device's memory sum (weights, KV, workspace,
overhead, the verdict and the offload that answers it) is read in one place.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rigwise.catalog.loader import read_csv
from rigwise.catalog.match import most_specific
from rigwise.errors import CatalogError, InputError
from rigwise.estimate.engine_rules import engine_defaults
from rigwise.hardware import Accelerator, Cluster, Link, Node
from rigwise.models import ModelSpec
from rigwise.plans import DOES_NOT_FIT, FITS, TIGHT
from rigwise.units import GB, GiB

# llama.cpp keeps logits for the whole micro-batch in fp32 (n_ubatch x n_vocab x 4 B; ikawrakow/
# ik_llama.cpp PR #1560) plus a few fp32 hidden-state buffers per token (ggml graph allocator).
_FP32_BYTES = 4
_HIDDEN_BUFFERS = 4


def device_class(accelerator: Accelerator) -> str:
    """``cpu`` or ``<vendor>-<memory family>``: nvidia-gddr, nvidia-hbm, apple-lpddr, amd-hbm."""
    return _device_class(accelerator.kind, accelerator.vendor, accelerator.memory_type)


@functools.lru_cache(maxsize=1024)
def _device_class(kind: str, vendor: str, memory_type: str) -> str:
    if kind == "cpu":
        return "cpu"
    memory = memory_type.lower()
    family = next((f for f in ("hbm", "gddr", "lpddr", "ddr") if f in memory), "other")
    return f"{vendor.lower()}-{family}"


@dataclass(frozen=True)
class EngineOverheads:
    """What an engine keeps for itself on a device (engine_overheads.csv)."""

    engine: str
    memory_fraction: float  # share of device memory the engine lets itself use
    fixed_overhead_bytes: float  # context, graphs, communication buffers
    workspace_tokens: int  # tokens per micro-batch the compute buffer is sized for
    max_concurrency: int  # the engine's default cap on concurrent sequences
    layer_hop_overhead_s: float  # per token, per device boundary in a layer split
    prefill_hop_overhead_s: float  # per pipelined batch, per device boundary in a layer split
    prefill_pipeline_tokens: int  # prompt tokens whose micro-batches pipeline over stages (0: none)
    tight_margin: float  # within this fraction of capacity the verdict is "tight"
    pipelined_serving: bool  # pipeline stages work on different micro-batches at once
    source: str
    step_overhead_s: float = 0.0  # per decode step: host scheduling, sampling, output handling
    request_overhead_s: float = 0.0  # per request, once: API server (HTTP, tokenise, stream)
    sequence_overhead_s: float = 0.0  # per step, per running sequence beyond the first: host work
    frontend_token_s: float = 0.0  # API-server CPU per streamed output token: caps a replica's rate
    logits_per_sequence: bool = False  # logits only at each sequence's last token (vLLM), not all
    logits_bytes: float = _FP32_BYTES  # bytes per vocabulary entry of one logits row at the peak
    kv_grows: bool = False  # KV blocks allocated as a sequence grows (paged), not at admission


def best_row(file: str, **keys: str) -> dict[str, str]:
    """The most specific row of ``file`` whose glob columns match ``keys`` (in priority order;
    the rule is ``catalog.match``'s)."""
    row = most_specific(read_csv(file), **keys)
    if row is None:
        raise CatalogError(f"{file}: no row matches {keys}; add a '*' default row.")
    return row


@functools.cache
def engine_overheads(engine: str, klass: str) -> EngineOverheads:
    row = best_row("engine_overheads.csv", engine=engine, device_class=klass)
    return EngineOverheads(
        engine=engine,
        memory_fraction=float(row["memory_fraction"]),
        fixed_overhead_bytes=float(row["fixed_overhead_gb"]) * GB,
        workspace_tokens=int(row["workspace_tokens"]),
        max_concurrency=int(row["max_concurrency"]),
        layer_hop_overhead_s=float(row["layer_hop_overhead_us"]) * 1e-6,
        prefill_hop_overhead_s=float(row["prefill_hop_overhead_ms"]) * 1e-3,
        prefill_pipeline_tokens=int(row["prefill_pipeline_tokens"]),
        tight_margin=float(row["tight_margin"]),
        pipelined_serving=row["pipelined_serving"].lower() == "true",
        source=row["source"],
        step_overhead_s=float(row.get("step_overhead_us") or 0.0) * 1e-6,
        request_overhead_s=float(row.get("request_overhead_ms") or 0.0) * 1e-3,
        sequence_overhead_s=float(row.get("sequence_overhead_us") or 0.0) * 1e-6,
        frontend_token_s=float(row.get("frontend_token_us") or 0.0) * 1e-6,
        logits_per_sequence=row.get("logits_rows", "tokens") == "sequences",
        logits_bytes=float(row.get("logits_bytes") or _FP32_BYTES),
        kv_grows=row.get("kv_reservation", "request") == "growing",
    )


@functools.cache
def apple_gpu_fraction(memory_bytes: float) -> float:
    """macOS's default GPU wired-memory limit as a share of RAM (recommendedMaxWorkingSetSize)."""
    try:
        rows = read_csv("apple_memory_limits.csv")
    except CatalogError:
        return 1.0  # data not packaged: no limit known, say so via the plan's notes
    gigabytes = round(memory_bytes / GiB, 3)  # the table is in Apple's marketed GB, i.e. GiB
    for row in rows:
        if float(row["min_memory_gb"]) <= gigabytes < float(row["max_memory_gb"]):
            return float(row["gpu_fraction"])
    return 1.0


def usable_memory_bytes(accelerator: Accelerator, overheads: EngineOverheads) -> float:
    """What the engine may fill on one device (Apple: the GPU wired limit applies too)."""
    capacity = accelerator.memory_bytes * overheads.memory_fraction
    if accelerator.vendor.lower() == "apple" and accelerator.kind != "cpu":
        capacity *= apple_gpu_fraction(accelerator.memory_bytes)
    return capacity


@dataclass(frozen=True)
class Stage:
    """One pipeline stage: ``tp`` identical devices of one node holding a share of the layers."""

    index: int
    node_index: int
    accelerator: Accelerator
    tp: int
    layer_fraction: float
    intra_link: Link | None
    host_memory_bytes: float | None
    host_bandwidth_bytes_per_s: float | None
    offloaded_fraction: float = 0.0  # share of this stage's weights held in host RAM
    attention_dp: int = (
        1  # attention data-parallel ranks among the tp devices (SGLang dp-attention)
    )
    ep: int = 1  # expert-parallel ranks among the tp devices (routed experts sharded, not split)
    nodes_spanned: int = 1  # a stage wider than one node runs its collectives over the network

    @property
    def attention_tp(self) -> int:
        """Devices that split one attention rank's heads (tp / attention_dp)."""
        return max(1, self.tp // self.attention_dp)

    @property
    def label(self) -> str:
        devices = f"{self.tp}x " if self.tp > 1 else ""
        return f"node{self.node_index}/stage{self.index}: {devices}{self.accelerator.id}"


@dataclass(frozen=True)
class DeviceMemory:
    """One device's memory in a plan: weights, KV cache, workspace, overhead, capacity."""

    device: str
    accelerator_id: str
    capacity_bytes: float
    weights_bytes: float
    kv_cache_bytes: float
    activations_bytes: float
    overhead_bytes: float
    host_offload_bytes: float
    verdict: str
    count: int = 1  # identical devices this entry stands for (a stage's tp group)

    @property
    def total_bytes(self) -> float:
        return (
            self.weights_bytes + self.kv_cache_bytes + self.activations_bytes + self.overhead_bytes
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "accelerator": self.accelerator_id,
            "capacity_bytes": self.capacity_bytes,
            "weights_bytes": self.weights_bytes,
            "kv_cache_bytes": self.kv_cache_bytes,
            "activations_bytes": self.activations_bytes,
            "overhead_bytes": self.overhead_bytes,
            "total_bytes": self.total_bytes,
            "host_offload_bytes": self.host_offload_bytes,
            "verdict": self.verdict,
            "count": self.count,
        }


@dataclass(frozen=True)
class MemoryBreakdown:
    """Every device's memory, the verdict (fits, tight, does not fit) and its reason."""

    per_device: tuple[DeviceMemory, ...]
    verdict: str
    reason: str
    host_offload_bytes: float = 0.0
    notes: tuple[str, ...] = field(default=())

    def _sum(self, name: str) -> float:
        total: float = sum(getattr(d, name) * d.count for d in self.per_device)
        return total

    @property
    def weights_bytes(self) -> float:
        return self._sum("weights_bytes")

    @property
    def kv_cache_bytes(self) -> float:
        return self._sum("kv_cache_bytes")

    @property
    def activations_bytes(self) -> float:
        return self._sum("activations_bytes")

    @property
    def overhead_bytes(self) -> float:
        return self._sum("overhead_bytes")

    @property
    def total_bytes(self) -> float:
        return self._sum("total_bytes")

    @property
    def capacity_bytes(self) -> float:
        return self._sum("capacity_bytes")

    def to_dict(self) -> dict[str, Any]:
        return {
            "weights_bytes": self.weights_bytes,
            "kv_cache_bytes": self.kv_cache_bytes,
            "activations_bytes": self.activations_bytes,
            "overhead_bytes": self.overhead_bytes,
            "total_bytes": self.total_bytes,
            "capacity_bytes": self.capacity_bytes,
            "host_offload_bytes": self.host_offload_bytes,
            "per_device": [d.to_dict() for d in self.per_device],
        }


def routed_expert_matrices(spec: ModelSpec) -> tuple[int, int]:
    """(MoE layers, matrix parameters of one routed expert in one layer); (0, 0) when dense."""
    moe = spec.moe
    if moe is None:
        return 0, 0
    layers = moe.num_moe_layers or spec.num_layers
    matrices = 3 if spec.gated_mlp else 2  # SwiGLU experts: gate, up, down
    return layers, matrices * spec.hidden_size * moe.expert_intermediate_size


def expert_weight_share(spec: ModelSpec) -> float:
    """Share of the parameters in routed experts (0 for dense models)."""
    if spec.moe is None:
        return 0.0
    layers, per_expert = routed_expert_matrices(spec)
    return min(1.0, layers * spec.moe.num_experts * per_expert / spec.params_total)


def kv_split(spec: ModelSpec, tp: int) -> int:
    """Tensor parallel shards KV heads; with fewer KV heads than devices they are replicated."""
    heads = 1 if spec.mla is not None else spec.num_kv_heads
    return max(1, min(tp, heads))


def stage_kv_split(spec: ModelSpec, stage: Stage) -> int:
    """Ways a stage divides the running batch's KV cache: attention-DP ranks hold their own
    requests (not replicated: the MLA latent cache too), and within a rank tensor parallel
    splits the KV heads (MLA's single latent head is replicated; DeepSeek-V2 Sec. 2.1)."""
    return kv_split(spec, stage.attention_tp) * stage.attention_dp


def device_weight_bytes(spec: ModelSpec, stage: Stage, weights_bytes: float) -> float:
    """Weights on one device of ``stage``: routed experts are sharded over all ``tp`` devices
    (expert parallel or tensor parallel alike); the rest (attention, dense MLPs, embeddings)
    is split over one attention rank's ``attention_tp`` devices and copied per rank."""
    total = weights_bytes * stage.layer_fraction
    experts = total * expert_weight_share(spec)
    return (total - experts) / stage.attention_tp + experts / stage.tp


def workspace_bytes(
    spec: ModelSpec,
    accelerator: Accelerator,
    overheads: EngineOverheads,
    max_sequences: int | None = None,
) -> float:
    """Activation peak one device reserves beside weights and KV cache: a few fp32 hidden-state
    buffers per token of one step, and the logits. llama.cpp keeps fp32 logits for every token
    of its micro-batch (``workspace_tokens`` = n_ubatch). vLLM sizes its KV cache after a
    profile run of one scheduler step (``engine_defaults.csv`` step_tokens, its
    max_num_batched_tokens) whose logits are taken only at the last token of each of
    min(max_num_seqs, step tokens) sequences and sampled, ``logits_bytes`` per vocabulary entry
    (engine_overheads.csv ``logits_rows`` / ``logits_bytes``, sourced there); a cap the user
    sets on running requests (``max_sequences``, vLLM's --max-num-seqs) replaces the default."""
    tokens = rows = overheads.workspace_tokens
    if overheads.logits_per_sequence:
        defaults = engine_defaults(overheads.engine, accelerator.memory_bytes)
        tokens = defaults.step_tokens or tokens
        rows = min(tokens, max_sequences or defaults.max_sequences or overheads.max_concurrency)
    hidden = tokens * _HIDDEN_BUFFERS * spec.hidden_size * _FP32_BYTES
    return hidden + rows * spec.vocab_size * overheads.logits_bytes


def _verdict(need: float, capacity: float, margin: float) -> str:
    if need > capacity:
        return DOES_NOT_FIT
    return TIGHT if need > capacity * (1.0 - margin) else FITS


def stage_memory(
    spec: ModelSpec,
    stage: Stage,
    weights_bytes: float,
    kv_bytes: float,
    overheads: EngineOverheads,
    max_sequences: int | None = None,
) -> DeviceMemory:
    """Memory of one device of ``stage``; ``weights_bytes``/``kv_bytes`` are for the whole model;
    ``max_sequences``: the user's cap on running requests (sizes an engine's workspace)."""
    weights = device_weight_bytes(spec, stage, weights_bytes)
    kv = kv_bytes * stage.layer_fraction / stage_kv_split(spec, stage)
    activations = workspace_bytes(spec, stage.accelerator, overheads, max_sequences)
    capacity = usable_memory_bytes(stage.accelerator, overheads)
    offloaded = weights * stage.offloaded_fraction
    need = weights - offloaded + kv + activations + overheads.fixed_overhead_bytes
    return DeviceMemory(
        device=stage.label,
        accelerator_id=stage.accelerator.id,
        capacity_bytes=capacity,
        weights_bytes=weights - offloaded,
        kv_cache_bytes=kv,
        activations_bytes=activations,
        overhead_bytes=overheads.fixed_overhead_bytes,
        host_offload_bytes=offloaded * stage.tp,
        verdict=_verdict(need, capacity, overheads.tight_margin),
        count=stage.tp,
    )


def summarize(devices: list[DeviceMemory], stages: list[Stage]) -> MemoryBreakdown:
    """Overall verdict: the worst device's, with the reason naming it."""
    host_used = sum(d.host_offload_bytes for d in devices)
    for verdict in (DOES_NOT_FIT, TIGHT):
        worst = [d for d in devices if d.verdict == verdict]
        if worst:
            d = max(worst, key=lambda x: x.total_bytes / x.capacity_bytes)
            reason = (
                f"{d.device} needs {d.total_bytes / GB:.1f} GB of {d.capacity_bytes / GB:.1f} "
                f"GB usable ({d.weights_bytes / GB:.1f} weights, "
                f"{d.kv_cache_bytes / GB:.1f} KV cache)."
            )
            return MemoryBreakdown(tuple(devices), verdict, reason, host_used)
    host_capacity = sum(s.host_memory_bytes or 0.0 for s in stages if s.offloaded_fraction)
    if host_used and host_used > host_capacity:
        reason = (
            f"Offloaded weights need {host_used / GB:.1f} GB of host RAM; "
            f"{host_capacity / GB:.1f} GB known."
        )
        return MemoryBreakdown(tuple(devices), DOES_NOT_FIT, reason, host_used)
    return MemoryBreakdown(tuple(devices), FITS, "", host_used)


def offload_fraction(
    spec: ModelSpec,
    stage: Stage,
    weights_bytes: float,
    kv_bytes: float,
    overheads: EngineOverheads,
    max_sequences: int | None = None,
) -> float:
    """Share of the stage's weights to move to host RAM so the device fits (0 if it fits);
    ``max_sequences`` as for ``stage_memory``."""
    probe = stage_memory(spec, stage, weights_bytes, kv_bytes, overheads, max_sequences)
    if probe.verdict != DOES_NOT_FIT or not stage.host_memory_bytes:
        return 0.0
    excess = probe.total_bytes - probe.capacity_bytes * (1.0 - overheads.tight_margin)
    return min(1.0, max(0.0, excess / probe.weights_bytes)) if probe.weights_bytes else 0.0


def _width(node: Node, index: int, split: str, tp: int | None, repeat: int) -> tuple[int, int]:
    """(tp width, nodes one group spans) for a run of ``repeat`` identical nodes. A width that
    is a multiple of the node's devices spans that many nodes (multi-node TP/EP groups)."""
    width = tp or (node.count if split == "tensor" else 1)
    if width > node.count and width % node.count == 0:
        span = width // node.count
        if repeat % span:
            raise InputError(
                f"--tp {width} spans {span} nodes but {repeat} identical ones start at "
                f"node {index}.",
                hint="Use a tensor-parallel size that fits the nodes given (--nodes).",
            )
        return width, span
    if width < 1 or node.count % width:
        raise InputError(
            f"--tp {width} does not divide node {index}'s {node.count} devices.",
            hint="Use a tensor-parallel size that divides the devices of every node.",
        )
    return width, 1


def _groups(
    cluster: Cluster, split: str, tp: int | None, cap: int | None
) -> tuple[list[tuple[int, Node, int, int]], int]:
    """(first node index, node, tp width, nodes spanned) of every tensor-parallel group, at
    most ``cap`` of them, and how many the cluster has."""
    groups: list[tuple[int, Node, int, int]] = []
    available = index = 0
    for node, repeat in cluster.runs:  # identical nodes in a row: one step, not one per node
        width, span = _width(node, index, split, tp, repeat)
        per_node = max(1, node.count // width)
        available += per_node * repeat // span
        for copy in range(0, repeat, span):
            room = per_node if cap is None else min(per_node, cap - len(groups))
            if room <= 0:
                break
            groups.extend((index + copy, node, width, span) for _ in range(room))
        index += repeat
    return groups, available


def group_count(cluster: Cluster, split: str, tp: int | None) -> int:
    """How many tensor-parallel groups of ``tp`` the cluster has (without building them)."""
    return _groups(cluster, split, tp, 0)[1]


def build_stages(
    cluster: Cluster,
    split: str,
    tp: int | None,
    pp: int | None,
    overheads_for: Callable[[Accelerator], EngineOverheads],
    max_stages: int | None = None,
    attention_dp: int = 1,
    ep: int = 1,
) -> tuple[Stage, ...]:
    """Pipeline stages for a cluster: ``split`` 'layer' (a device per stage) or 'tensor'
    (a node per stage), or an explicit ``tp`` x ``pp``. Layers go in proportion to the
    memory each stage can use (llama.cpp's default --tensor-split; vLLM splits evenly on
    identical devices, which is the same thing). At most ``max_stages`` stages (a model's
    layer count: a stage holds at least one layer), so the work is bounded whatever the
    cluster's size; devices past that hold no layers."""
    cap = min(x for x in (max_stages, pp) if x is not None) if (max_stages or pp) else None
    groups, available = _groups(cluster, split, tp, cap)
    if pp is not None:
        if max_stages is not None and pp > max_stages:
            raise InputError(
                f"--pp {pp} is more pipeline stages than the model's {max_stages} layers.",
                hint=f"Use --pp {max_stages} or less.",
            )
        if pp < 1 or pp > available:
            total = cluster.accelerator_count
            raise InputError(
                f"--pp {pp} x --tp {tp or 1} needs more than the {total} devices given.",
                hint="Lower --pp or --tp, or add devices (--on 'Nx GPU', --nodes).",
            )
        groups = groups[:pp]
    weights = [
        usable_memory_bytes(n.accelerator, overheads_for(n.accelerator)) * w
        for _, n, w, _ in groups
    ]
    return tuple(
        Stage(
            index=i,
            node_index=node_index,
            accelerator=node.accelerator,
            tp=width,
            layer_fraction=weight / sum(weights),
            intra_link=node.intra_link if span == 1 else cluster.network,
            host_memory_bytes=node.host_memory_bytes,
            host_bandwidth_bytes_per_s=node.host_memory_bandwidth_bytes_per_s,
            attention_dp=attention_dp,
            ep=ep,
            nodes_spanned=span,
        )
        for i, ((node_index, node, width, span), weight) in enumerate(
            zip(groups, weights, strict=True)
        )
    )


def can_offload(stage: Stage) -> bool:
    """Offload needs separate host RAM: not on CPUs or unified-memory (Apple) devices."""
    kind = stage.accelerator.kind
    host = bool(stage.host_memory_bytes) and bool(stage.host_bandwidth_bytes_per_s)
    return kind not in ("cpu", "unified") and host
