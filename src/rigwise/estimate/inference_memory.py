"""Memory of an inference deployment, per device: weights, KV cache, workspace, engine overhead.

The layout is a list of ``Stage``s (``estimate.inference_stages``): a pipeline stage is ``tp``
identical devices of one node holding ``layer_fraction`` of the layers. Engine reservations
(CUDA context, vLLM's memory fraction, llama.cpp's compute buffer) come from
``estimate.engine_overheads`` (``catalog/data/engine_overheads.csv``), Apple's GPU wired-memory
limit included. Nothing here hard-codes a spec.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, ClassVar

from rigwise.estimate.engine_overheads import FP32_BYTES, EngineOverheads, usable_memory_bytes
from rigwise.estimate.engine_rules import engine_defaults
from rigwise.estimate.inference_stages import Stage
from rigwise.hardware import Accelerator
from rigwise.models import ModelSpec
from rigwise.plans import DOES_NOT_FIT, FITS, TIGHT
from rigwise.serialize import JsonObject
from rigwise.units import GB

# llama.cpp keeps logits for the whole micro-batch in fp32 (n_ubatch x n_vocab x 4 B; ikawrakow/
# ik_llama.cpp PR #1560) plus a few fp32 hidden-state buffers per token (ggml graph allocator).
_HIDDEN_BUFFERS = 4


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

    @functools.cached_property
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
class MemoryBreakdown(JsonObject):
    """Every device's memory, the verdict (fits, tight, does not fit) and its reason. Its
    JSON: the sums over the devices, the host offload and each device (not the verdict)."""

    json_keys: ClassVar[tuple[str, ...]] = (
        "weights_bytes", "kv_cache_bytes", "activations_bytes", "overhead_bytes", "total_bytes",
        "capacity_bytes", "host_offload_bytes", "per_device",
    )  # fmt: skip

    per_device: tuple[DeviceMemory, ...]
    verdict: str
    reason: str
    host_offload_bytes: float = 0.0
    notes: tuple[str, ...] = field(default=())

    # the sums are cached (in the frozen instance's __dict__): a setup's plans share their
    # breakdowns (api/infer_memory.memory_of), and each plan's JSON and checks read them
    def _sum(self, name: str) -> float:
        total: float = sum(getattr(d, name) * d.count for d in self.per_device)
        return total

    @functools.cached_property
    def weights_bytes(self) -> float:
        return self._sum("weights_bytes")

    @functools.cached_property
    def kv_cache_bytes(self) -> float:
        return self._sum("kv_cache_bytes")

    @functools.cached_property
    def activations_bytes(self) -> float:
        return self._sum("activations_bytes")

    @functools.cached_property
    def overhead_bytes(self) -> float:
        return self._sum("overhead_bytes")

    @functools.cached_property
    def total_bytes(self) -> float:
        return self._sum("total_bytes")

    @functools.cached_property
    def capacity_bytes(self) -> float:
        return self._sum("capacity_bytes")


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
    hidden = tokens * _HIDDEN_BUFFERS * spec.hidden_size * FP32_BYTES
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
