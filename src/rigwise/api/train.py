"""``plan_training(options) -> TrainingPlan``: the training planner's public entry point.

The options are one typed, frozen ``TrainOptions`` (each field documented where it is
declared; adding an option is one field and its docstring line), validated by pydantic at this
edge and shared by the CLI, ``--queries``, the web API, the grid's jobs and the build designer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rigwise.api._lookup import cached_cluster, cached_model
from rigwise.errors import InputError, validation_message
from rigwise.estimate.compute import TrainingFactors, training_factors
from rigwise.estimate.training import evaluate, plan_from
from rigwise.estimate.training_layout import (
    LORA_TARGETS,
    Geometry,
    Layout,
    LayoutArrays,
    Workload,
    geometry,
)
from rigwise.estimate.training_step import Fabric
from rigwise.hardware import Cluster
from rigwise.models import ModelSpec
from rigwise.plans import SearchStats, TrainingPlan
from rigwise.search import OBJECTIVES, SearchResult, prune_rules, search_layouts
from rigwise.units import parse_count

_LAYOUT_FLAGS = ("tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch", "zero", "recompute")


class TrainOptions(BaseModel):
    """The options of ``rigwise train`` (long option names with ``_``); unknown keys are an
    error naming the key. Counts accept '2T'-style strings."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    model: str
    """Catalog name or HF config.json."""
    on: str | None = None
    """One node: 'rtx-4090', '8x h100-sxm', 'dgx-h100'."""
    nodes: int = Field(1, ge=1, le=1_000_000)
    """Number of such nodes (with ``network``)."""
    network: str | None = None
    """Link between nodes: infiniband-ndr, roce-400g, 100gbe ..."""
    cluster: str | None = None
    """Cluster YAML file (identical accelerators) instead of ``on``."""
    method: Literal["pretrain", "full", "lora", "qlora"] = "pretrain"
    """What is trained: pretraining, full fine-tune, LoRA or QLoRA."""
    precision: Literal["bf16", "fp16", "fp8"] = "bf16"
    """Compute precision of the matmuls."""
    optimizer: Literal["adamw", "adamw-8bit", "sgd", "adafactor"] = "adamw"
    """Optimizer (sets the optimizer state per parameter)."""
    seq: int = Field(2048, ge=1)
    """Sequence length in tokens."""
    global_batch: int | None = Field(None, ge=1)
    """Sequences per optimizer step (default: one micro-batch per data-parallel rank)."""
    micro_batch: int | None = Field(None, ge=1)
    """Sequences per GPU per forward/backward pass."""
    tokens: float | None = Field(None, gt=0)
    """Tokens to train on (for time, GPU-hours, energy and cost)."""
    steps: int | None = Field(None, ge=1)
    """Optimizer steps to train (instead of ``tokens``)."""
    epochs: float | None = Field(None, gt=0)
    """Epochs over ``dataset_tokens`` (instead of ``tokens``)."""
    dataset_tokens: float | None = Field(None, gt=0)
    """Tokens in the dataset (with ``epochs``)."""
    tp: int | None = Field(None, ge=1)
    """Tensor-parallel size."""
    pp: int | None = Field(None, ge=1)
    """Pipeline-parallel stages."""
    dp: int | None = Field(None, ge=1)
    """Data-parallel replicas (default: the GPUs left)."""
    cp: int | None = Field(None, ge=1)
    """Context-parallel size."""
    ep: int | None = Field(None, ge=1)
    """Expert-parallel size (MoE models)."""
    vpp: int | None = Field(None, ge=1)
    """Virtual pipeline stages per rank (interleaved schedule)."""
    sequence_parallel: bool | None = None
    """Megatron sequence parallelism (default: on with tp > 1)."""
    zero: Literal[0, 1, 2, 3] | None = None
    """ZeRO / FSDP sharding stage."""
    recompute: Literal["none", "selective", "full"] | None = None
    """Activation recomputation (default: full for LoRA/QLoRA, else none)."""
    offload: Literal["none", "optimizer", "params"] = "none"
    """CPU offload of the optimizer state or the parameters."""
    lora_rank: int = Field(16, ge=1)
    """LoRA rank."""
    flash_attention: bool = True
    """FlashAttention (no materialised attention scores)."""
    compile: bool = True
    """Fused elementwise kernels (torch.compile, Megatron); False = eager."""
    float8_scaling: Literal["tensorwise", "rowwise"] = "tensorwise"
    """FP8 scaling granularity (with precision fp8)."""
    async_tp: bool = False
    """TP collectives overlapped with the matmuls (AsyncTP)."""
    dropout: bool | None = None
    """Dropout on (default: the model's own setting)."""
    overlap_grad_reduce: bool = True
    """Data-parallel gradient reduction overlapped with the backward pass."""
    search: bool = False
    """Find the best layout (fixed layout options stay fixed)."""
    top: int = Field(1, ge=1, le=100)
    """With ``search``: how many layouts to return."""
    objective: Literal["time", "cost", "energy"] = "time"
    """With ``search``: what the best layout minimises."""
    price: float | None = Field(None, ge=0)
    """USD per GPU-hour (default: the catalog's rental price)."""
    power_limit: float | None = Field(None, gt=0)
    """GPU power cap in watts."""
    calibration: dict[str, float] | None = None
    """Measured efficiency factors (``rigwise bench``) replacing the catalog's."""

    @field_validator("seq", "global_batch", "steps", mode="before")
    @classmethod
    def _int_counts(cls, value: Any) -> Any:
        return int(parse_count(value)) if isinstance(value, str) else value

    @field_validator("tokens", "dataset_tokens", mode="before")
    @classmethod
    def _counts(cls, value: Any) -> Any:
        return parse_count(value) if isinstance(value, str) else value


def _model(name: str) -> ModelSpec:
    return cached_model(name)


def _cluster(on: str | None, nodes: int, network: str | None, path: str | None) -> Cluster:
    return cached_cluster(on, nodes, network, path, "dgx-h100")


def fabric_of(cluster: Cluster, power_limit: float | None = None) -> Fabric:
    """The training fabric of a homogeneous cluster; mixed nodes are bad input for training."""
    first = cluster.nodes[0]
    if any(node.accelerator.id != first.accelerator.id for node in cluster.nodes):
        names = sorted({node.accelerator.id for node in cluster.nodes})
        raise InputError(
            f"Training needs identical accelerators, got {', '.join(names)}.",
            hint="Plan each group of identical nodes separately (--on DEVICE --nodes N).",
        )
    if len(cluster.nodes) > 1 and cluster.network is None:
        raise InputError(
            f"{len(cluster.nodes)} nodes but no network between them.",
            hint="Pass --network (e.g. infiniband-ndr, roce-400g, 100gbe).",
        )
    intra = first.intra_link
    # HGX/DGX-class nodes (NVSwitch) carry one NIC per GPU; other machines share one.
    ports = first.count if intra is not None and intra.kind == "nvswitch" else 1
    return Fabric(first.accelerator, first.count, intra, cluster.network, ports, power_limit)


def _workload(opts: TrainOptions, spec: Any, gpus: int) -> Workload:
    global_batch = opts.global_batch or max(gpus // _model_parallel(opts), 1) * (
        opts.micro_batch or 1
    )
    tokens = opts.tokens
    if tokens is None and opts.steps is not None:
        tokens = float(opts.steps * global_batch * opts.seq)
    if tokens is None and opts.epochs is not None:
        if opts.dataset_tokens is None:
            raise InputError("--epochs needs --dataset-tokens.", hint="Add --dataset-tokens 1B.")
        tokens = opts.epochs * opts.dataset_tokens
    dropout = (
        opts.dropout if opts.dropout is not None else not bool(getattr(spec, "gated_mlp", True))
    )
    return Workload(
        seq_len=opts.seq,
        global_batch=global_batch,
        method=opts.method,
        precision=opts.precision,
        optimizer=opts.optimizer,
        lora_rank=opts.lora_rank,
        lora_targets=LORA_TARGETS,
        flash_attention=opts.flash_attention,
        dropout=dropout,
        overlap_grad_reduce=opts.overlap_grad_reduce,
        fused_kernels=opts.compile,
        async_tp=opts.async_tp,
        float8_scaling=opts.float8_scaling,
        offload=opts.offload,
        tokens=tokens,
    )


def _model_parallel(opts: TrainOptions) -> int:
    return (opts.tp or 1) * (opts.pp or 1) * (opts.cp or 1)


def _given_layout(opts: TrainOptions, work: Workload, gpus: int) -> Layout:
    tp, pp, cp = opts.tp or 1, opts.pp or 1, opts.cp or 1
    dp = opts.dp or max(gpus // (tp * pp * cp), 1)
    recompute = opts.recompute or ("full" if opts.method in ("lora", "qlora") else "none")
    zero = opts.zero if opts.zero is not None else 0
    sp = opts.sequence_parallel if opts.sequence_parallel is not None else tp > 1
    return Layout(
        tp=tp,
        pp=pp,
        dp=dp,
        cp=cp,
        ep=opts.ep or 1,
        vpp=opts.vpp or 1,
        micro_batch=opts.micro_batch or 1,
        global_batch=work.global_batch,
        zero=zero,
        recompute=recompute,
        sequence_parallel=bool(sp),
    )


def _price(opts: TrainOptions, fabric: Fabric) -> float | None:
    return opts.price if opts.price is not None else fabric.accelerator.rental_usd_per_hour


def plan_training(options: TrainOptions | None = None, /, **fields: object) -> TrainingPlan:
    """Estimate (or, with ``search=True``, find) a training layout; see docs/train.md.

    Pass a ``TrainOptions``, or its fields as keywords (``model="llama-3.1-8b",
    on="8x h100-sxm"``), or both (keywords override); every field is documented on
    ``TrainOptions``. Bad input raises ``InputError`` naming the value; a layout that does
    not fit is a plan with ``fits=False`` and its reason.
    """
    opts = _options(options, fields)
    spec = _model(opts.model)
    cluster = _cluster(opts.on, opts.nodes, opts.network, opts.cluster)
    fabric = fabric_of(cluster, opts.power_limit)
    gpus = cluster.accelerator_count
    factors = training_factors(fabric.accelerator.id, opts.calibration)
    geo = geometry(spec)
    work = _workload(opts, spec, gpus)
    if opts.search:
        return _searched(opts, spec, geo, work, fabric, factors, gpus)
    return _single(opts, spec, geo, work, fabric, factors, gpus)


def _options(options: TrainOptions | None, fields: Mapping[str, object]) -> TrainOptions:
    if options is not None and not fields:
        return options
    given = {**(options.model_dump(exclude_unset=True) if options else {}), **fields}
    unknown = sorted(set(given) - set(TrainOptions.model_fields))
    if unknown:
        from rigwise.errors import closest

        hint = f"Did you mean: {', '.join(closest(unknown[0], TrainOptions.model_fields))}?"
        raise InputError(f"Unknown option {unknown[0]!r}.", hint=hint)
    calibration = given.get("calibration")
    if isinstance(calibration, Mapping):
        given["calibration"] = dict(calibration)
    try:
        return TrainOptions.model_validate(given)
    except ValidationError as exc:
        message = validation_message(exc, "Bad option")
        raise InputError(message, hint="See `rigwise train --help`.") from None


def _single(
    opts: TrainOptions,
    spec: Any,
    geo: Geometry,
    work: Workload,
    fabric: Fabric,
    factors: TrainingFactors,
    gpus: int,
) -> TrainingPlan:
    layout = _given_layout(opts, work, gpus)
    lay = LayoutArrays.from_layouts([layout])
    broken = [
        reason for reason, bad in prune_rules(geo, work, lay, gpus, fabric.gpus_per_node) if bad[0]
    ]
    # A user may ask for SP with tp=1 (a no-op) or TP without SP: both are valid layouts.
    broken = [b for b in broken if not b.startswith("sequence parallel")]
    if broken:
        return _infeasible(
            spec, fabric, gpus, layout, "; ".join(broken) + f" (layout {_short(layout)})"
        )
    ev = evaluate(geo, work, lay, fabric, factors)
    return plan_from(
        ev,
        0,
        work=work,
        model=spec.name,
        fabric=fabric,
        factors=factors,
        price=_price(opts, fabric),
    )


def _short(layout: Layout) -> str:
    return (
        f"tp={layout.tp} pp={layout.pp} dp={layout.dp} cp={layout.cp} "
        f"mb={layout.micro_batch} on {layout.gpus} GPUs"
    )


def _infeasible(
    spec: Any, fabric: Fabric, gpus: int, layout: Layout | None, reason: str
) -> TrainingPlan:
    return TrainingPlan(
        fits=False,
        reason=reason,
        model=spec.name,
        accelerator=fabric.accelerator.id,
        gpus=gpus,
        layout=layout,
        memory_per_gpu=None,
        step=None,
    )


def _searched(
    opts: TrainOptions,
    spec: Any,
    geo: Geometry,
    work: Workload,
    fabric: Fabric,
    factors: TrainingFactors,
    gpus: int,
) -> TrainingPlan:
    fixed = {name: getattr(opts, name) for name in _LAYOUT_FLAGS}
    fixed["sequence_parallel"] = (
        None if opts.sequence_parallel is None else int(opts.sequence_parallel)
    )
    result = search_layouts(geo, work, fabric, factors, gpus, fixed, opts.objective)
    if result.evaluation is None or result.feasible == 0:
        counts = ", ".join(f"{n} {reason}" for reason, n in result.pruned.items())
        plan = _infeasible(spec, fabric, gpus, None, f"no layout of {gpus} GPUs works: {counts}")
        return replace(plan, search=_stats(result))
    price = _price(opts, fabric)
    plans = [
        plan_from(
            result.evaluation,
            int(i),
            work=work,
            model=spec.name,
            fabric=fabric,
            factors=factors,
            price=price,
        )
        for i in result.order[: opts.top]
    ]
    return replace(plans[0], search=_stats(result), alternatives=tuple(plans[1:]))


def _stats(result: SearchResult) -> SearchStats:
    seconds = result.seconds
    return SearchStats(
        objective=result.objective,
        generated=result.generated,
        evaluated=result.evaluated,
        feasible=result.feasible,
        pruned=dict(result.pruned),
        seconds=seconds,
        layouts_per_s=result.generated / seconds if seconds > 0 else None,
    )


__all__ = ["OBJECTIVES", "TrainOptions", "TrainingPlan", "fabric_of", "plan_training"]
