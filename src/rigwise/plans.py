"""What the planners answer: frozen results with typed parts, one module for all of them.

``InferencePlan`` (``rigwise.plan_inference``) and ``TrainingPlan`` (``rigwise.plan_training``)
and their parts: the layout, the workload, the latency check, the levers, the training memory
and step breakdowns and the search statistics. The estimators' own breakdowns they carry
(``Phase``, the inference ``MemoryBreakdown``, ``ServingEstimate``, the training ``Layout``)
stay next to the arithmetic that makes them.

Every class here turns into JSON through ``rigwise.serialize.to_jsonable``: fields in order,
then the properties named in ``json_properties``; field metadata renames a key
(``JSON_KEY``), leaves an empty value out (``JSON_OMIT_EMPTY``) or renames keys of the part
(``JSON_INNER``); ``plan.to_dict()`` is the same JSON. The keys are documented in
docs/infer.md and docs/train.md.

This module imports nothing of rigwise at run time (the types are for checkers only), so any
layer may build these results without an import cycle.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Literal

from rigwise.serialize import (
    JSON_INLINE,
    JSON_INNER,
    JSON_NULL_IF_EMPTY,
    JSON_OMIT_EMPTY,
    JSON_SKIP,
    JsonObject,
)

if TYPE_CHECKING:
    from rigwise.estimate.inference import Phase
    from rigwise.estimate.inference_memory import MemoryBreakdown as InferenceMemory
    from rigwise.estimate.serving import ServingEstimate
    from rigwise.estimate.serving_disagg import Role
    from rigwise.estimate.training_layout import Layout

# The verdicts of an inference plan (the memory estimate sets them).
FITS, TIGHT, DOES_NOT_FIT = "fits", "tight", "does not fit"


# --- inference ------------------------------------------------------------------------------


@dataclass(frozen=True)
class StageShare(JsonObject):
    """One pipeline stage: the devices it runs on and the share of the layers it holds."""

    device: str
    layer_fraction: float


@dataclass(frozen=True)
class DisaggLayout(JsonObject):
    """Disaggregated serving: the prefill pool and the decode pool."""

    prefill: Role
    decode: Role


@dataclass(frozen=True)
class InferenceLayout(JsonObject):
    """How the devices share the model: split kind, tensor-parallel size, pipeline stages,
    replicas (dp), expert and attention data parallelism, the devices used, and with
    disaggregated serving its two pools."""

    split: str
    tp: int
    pp: int
    dp: int
    ep: int
    attention_dp: int
    gpus: int
    stages: tuple[StageShare, ...]
    disagg: DisaggLayout | None = field(default=None, metadata={JSON_OMIT_EMPTY: True})


@dataclass(frozen=True)
class InferenceWorkload(JsonObject):
    """What is asked: prompt and generated tokens, the context reserved, concurrent requests."""

    prompt: int
    gen: int
    context: int
    concurrency: int | Literal["max"]


@dataclass(frozen=True)
class LatencyCheck(JsonObject):
    """The plan against a per-token / first-token budget (``latency_budget``)."""

    budget_s: float
    ttft_s: float
    seconds_per_token: float
    ttft_meets_budget: bool
    token_meets_budget: bool


@dataclass(frozen=True)
class Lever(JsonObject):
    """One change of the options, measured by planning again with it."""

    description: str
    change: Mapping[str, object]
    verdict: str
    decode_tokens_per_s: float | None
    decode_speedup: float | None
    fixes_fit: bool
    quality_loss: bool = False  # fewer bits per weight than the plan: ranked after lossless levers
    # P10-P90 of decode_tokens_per_s: the changed plan's own range (estimate/plan_intervals.py)
    decode_tokens_per_s_interval: list[float] | None = None


@dataclass(frozen=True, kw_only=True)
class InferencePlan(JsonObject):
    """One inference deployment: verdict and reason, memory per device, prefill, decode,
    serving under concurrency, the latency check and the levers that would change it."""

    json_properties: ClassVar[tuple[str, ...]] = ("fits", "ttft_s")

    model: str
    hardware: str
    engine: str
    quant: str
    kv_quant: str
    verdict: str
    reason: str
    layout: InferenceLayout
    workload: InferenceWorkload
    memory: InferenceMemory
    prefill: Phase | None
    decode: Phase | None = field(metadata={JSON_INNER: {"seconds": "seconds_per_token"}})
    serving: ServingEstimate | None
    latency: LatencyCheck | None = None
    power: Mapping[str, object] | None = None  # with power_limit: speed kept, watts, J/token
    levers: tuple[Lever, ...] = ()
    notes: tuple[str, ...] = ()
    # gpu | unified | cpu ... of the stages (what the levers may add); not part of the JSON
    device_kinds: tuple[str, ...] = field(default=(), metadata={JSON_SKIP: True})
    # the engine rule (engine_rules.csv) this layout breaks, "" when none (JSON null)
    broken_rule: str = field(default="", metadata={JSON_NULL_IF_EMPTY: True})

    @property
    def fits(self) -> bool:
        return self.verdict != DOES_NOT_FIT

    @property
    def ttft_s(self) -> float | None:
        return self.prefill.seconds if self.prefill else None


# --- training -------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainingMemory(JsonObject):
    """Memory per GPU of one training layout, by what holds it."""

    json_properties: ClassVar[tuple[str, ...]] = ("total_bytes",)

    weights_bytes: float
    gradients_bytes: float
    optimizer_bytes: float
    activations_bytes: float
    other_bytes: float
    capacity_bytes: float
    # the part of other_bytes outside PyTorch's caching allocator (CUDA context, NCCL
    # buffers: TrainingFactors.outside_allocator_bytes); not part of the JSON
    outside_allocator_bytes: float = field(default=0.0, metadata={JSON_SKIP: True})

    @property
    def tensor_bytes(self) -> float:
        """Weights, gradients, optimizer state and activations: what
        ``torch.cuda.max_memory_allocated`` counts (not in the JSON)."""
        return (
            self.weights_bytes
            + self.gradients_bytes
            + self.optimizer_bytes
            + self.activations_bytes
        )

    @property
    def reserved_bytes(self) -> float:
        """What ``torch.cuda.max_memory_reserved`` counts: the tensors and the caching
        allocator's slack, without the CUDA context and NCCL's buffers (not in the JSON)."""
        return self.total_bytes - self.outside_allocator_bytes

    @property
    def total_bytes(self) -> float:
        return self.tensor_bytes + self.other_bytes


# The parts of one optimizer step, in the order the JSON gives them (estimate/training_step
# makes them; ``--fields step.<part>`` names them).
STEP_PARTS = (
    "compute_s",
    "recompute_s",
    "memory_bound_s",
    "tp_comm_s",
    "cp_comm_s",
    "ep_comm_s",
    "pp_bubble_s",
    "pp_p2p_s",
    "dp_comm_s",
    "zero3_comm_s",
    "optimizer_s",
    "offload_s",
    "overhead_s",
)


@dataclass(frozen=True)
class StepBreakdown(JsonObject):
    """One optimizer step: seconds by part (compute, comms, bubble ...) and micro-batches."""

    json_properties: ClassVar[tuple[str, ...]] = ("seconds",)
    json_inline_keys: ClassVar[tuple[str, ...]] = STEP_PARTS  # the keys ``parts`` holds

    parts: Mapping[str, float] = field(metadata={JSON_INLINE: True})
    microbatches: int

    @property
    def seconds(self) -> float:
        return float(sum(self.parts.values()))


@dataclass(frozen=True)
class SearchStats(JsonObject):
    """What a layout search did: candidates generated, evaluated, feasible, pruned by reason."""

    objective: str
    generated: int
    evaluated: int
    feasible: int
    pruned: Mapping[str, int]
    seconds: float
    layouts_per_s: float | None


@dataclass(frozen=True, kw_only=True)
class TrainingPlan(JsonObject):
    """One training layout's estimate; ``fits=False`` carries the ``reason``. With a search,
    ``search`` says what it did and ``alternatives`` are the next best layouts."""

    fits: bool
    reason: str
    model: str
    accelerator: str
    gpus: int
    layout: Layout | None
    memory_per_gpu: TrainingMemory | None
    step: StepBreakdown | None
    tokens_per_s: float = 0.0
    model_tflops_per_gpu: float = 0.0
    mfu: float = 0.0
    hfu: float = 0.0
    time_to_train_s: float | None = None
    gpu_hours: float | None = None
    energy_kwh: float | None = None
    cost_usd: float | None = None
    price_usd_per_gpu_hour: float | None = None
    goodput: float | None = None
    power_watts_per_gpu: float | None = None
    notes: tuple[str, ...] = ()
    search: SearchStats | None = field(default=None, metadata={JSON_OMIT_EMPTY: True})
    alternatives: tuple[TrainingPlan, ...] = field(default=(), metadata={JSON_OMIT_EMPTY: True})


__all__ = [
    "DOES_NOT_FIT",
    "FITS",
    "TIGHT",
    "DisaggLayout",
    "InferenceLayout",
    "InferencePlan",
    "InferenceWorkload",
    "LatencyCheck",
    "Lever",
    "SearchStats",
    "StageShare",
    "StepBreakdown",
    "TrainingMemory",
    "TrainingPlan",
]
