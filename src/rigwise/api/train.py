"""``plan_training(options) -> TrainingPlan``: the training planner's public entry point.

The options are one typed, frozen ``TrainOptions`` (each field documented where it is
declared; adding an option is one field and its docstring line), validated by pydantic at this
edge and shared by the CLI, ``--queries``, the web API, the grid's jobs and the build designer.
``seq="max"`` finds the longest sequence that fits.

The options class itself is ``rigwise.api.train_options`` (one documented field per option).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from rigwise.api._lookup import cached_cluster, cached_geometry, cached_model
from rigwise.api.train_options import TrainOptions, tokens_to_train
from rigwise.errors import InputError
from rigwise.estimate.compute import TrainingFactors, catalog_training_factors, training_factors
from rigwise.estimate.engine_rules import compute_capability, meets
from rigwise.estimate.training import Evaluation, evaluate, plan_from
from rigwise.estimate.training_layout import (
    Geometry,
    Layout,
    LayoutArrays,
    Workload,
)
from rigwise.estimate.training_presets import framework_settings
from rigwise.estimate.training_step import Fabric
from rigwise.hardware import Accelerator, Cluster
from rigwise.models import ModelSpec
from rigwise.plans import TrainingPlan
from rigwise.search import (
    OBJECTIVES,
    SEQ_STEP,
    SearchResult,
    longest_fitting,
    prune_rules,
    search_layouts,
)
from rigwise.validate_input import check_option_names, merged_options, validated

Notes = tuple[str, ...]
Search = Callable[..., SearchResult]  # search_layouts, or a batch's memo of it
_LAYOUT_FLAGS = ("tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch", "zero", "recompute")


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


def _workload(opts: TrainOptions, spec: ModelSpec, gpus: int, seq: int) -> Workload:
    replicas = opts.dp or max(gpus // _model_parallel(opts), 1)  # the ones given, else all fit
    global_batch = opts.global_batch or replicas * (opts.micro_batch or 1)
    tokens = tokens_to_train(opts, global_batch * seq)
    dropout = (
        opts.dropout if opts.dropout is not None else not bool(getattr(spec, "gated_mlp", True))
    )
    paged = opts.paged_optimizer if opts.paged_optimizer is not None else opts.method == "qlora"
    return Workload(
        seq_len=seq,
        global_batch=global_batch,
        method=opts.method,
        precision=opts.precision,
        optimizer=opts.optimizer,
        lora_rank=opts.lora_rank,
        lora_targets=tuple(opts.lora_targets),
        flash_attention=opts.flash_attention,
        dropout=dropout,
        overlap_grad_reduce=opts.overlap_grad_reduce,
        fused_kernels=opts.compile,
        async_tp=opts.async_tp or opts.tp_comm_overlap,
        selective_policy=opts.selective_policy,
        float8_scaling=opts.float8_scaling,
        offload=opts.offload,
        pure_bf16=opts.pure_bf16,
        optimizer_in_backward=opts.optimizer_in_backward,
        activation_offload=opts.activation_offload,
        chunked_loss=opts.chunked_loss,
        fused_loss=opts.fused_loss,
        embedding_own_unit=opts.embedding_own_unit,
        torch_fsdp=opts.torch_fsdp,
        paged_optimizer=paged,
        tokens=tokens,
    )


def _model_parallel(opts: TrainOptions) -> int:
    return (opts.tp or 1) * (opts.pp or 1) * (opts.cp or 1)


def given_layout(opts: TrainOptions, work: Workload, gpus: int) -> Layout:
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


def _given(options: TrainOptions | None, fields: Mapping[str, object]) -> dict[str, object]:
    """The options set explicitly: the object's set fields, overridden by keywords."""
    return merged_options(options, fields)


def _validated(options: Mapping[str, object]) -> TrainOptions:
    check_option_names(options, TrainOptions.model_fields, "train")
    calibration = options.get("calibration")
    if isinstance(calibration, Mapping):
        options = {**options, "calibration": dict(calibration)}
    return validated(TrainOptions, options, "Bad option", "See `rigwise train --help`.")


def plan_training(options: TrainOptions | None = None, /, **fields: object) -> TrainingPlan:
    """Estimate (or, with ``search=True``, find) a training layout; see docs/train.md.

    Pass a ``TrainOptions``, or its fields as keywords (``model="llama-3.1-8b",
    on="8x h100-sxm"``), or both (keywords override); every field is documented on
    ``TrainOptions``. Bad input raises ``InputError`` naming the value; a layout that does
    not fit is a plan with ``fits=False`` and its reason.

    With ``framework`` the framework's defaults (``catalog/data/training_frameworks.yaml``)
    fill every option not given explicitly. When the default layout does not fit and some
    layout flags are free, the layout is searched instead (a note says so)."""
    return planned(*prepared(options, fields))


def planned(setup: _Setup, notes: Notes) -> TrainingPlan:
    """The plan of prepared options (``prepared``), its preparation's ``notes`` in front."""
    if setup.opts.seq == "max":
        return noted(_longest_seq(setup), *notes)
    return noted(_plan(setup, setup.workload(setup.opts.seq)), *notes)


def noted(plan: TrainingPlan, *notes: str) -> TrainingPlan:
    """``plan`` with ``notes`` in front of its own."""
    return replace(plan, notes=(*notes, *plan.notes)) if notes else plan


def prepared(options: TrainOptions | None, fields: Mapping[str, object]) -> tuple[_Setup, Notes]:
    """The validated options (with a framework's defaults) and what every plan of them shares,
    and the note saying which defaults a framework filled in."""
    given = _given(options, fields)
    opts = options if options is not None and not fields else _validated(given)
    spec, geo = _model(opts.model), cached_geometry(opts.model)
    cluster = _cluster(opts.on, opts.nodes, opts.network, opts.cluster)
    fabric = fabric_of(cluster, opts.power_limit)
    if opts.power_limit is not None:  # a cap the device accepts (nvidia-smi -pl)
        from rigwise.hardware.power_limits import check_power_limit

        check_power_limit(opts.power_limit, (fabric.accelerator,))
    gpus = cluster.accelerator_count
    notes: Notes = ()
    if opts.framework:
        preset = framework_settings(opts.framework, opts.method, gpus)
        opts = _validated({**preset, **given})
        applied = ", ".join(f"{k}={v}" for k, v in preset.items() if k not in given)
        notes = (f"{opts.framework} defaults: {applied or 'none needed'}",)
    _check_precision(opts, fabric.accelerator)
    if (opts.ep or 1) > 1:  # as infer: a dense model has no experts to shard
        from rigwise.estimate.serving_layout import check_expert_parallel

        check_expert_parallel(spec, opts.ep or 1, devices=gpus)
    factors = _factors(fabric.accelerator.id, opts.calibration)
    return _Setup(opts, spec, geo, fabric, factors, gpus), notes


def _check_precision(opts: TrainOptions, accelerator: Accelerator) -> None:
    """FP8 training needs FP8 tensor cores (torchao float8: compute capability 8.9+); MXFP8
    needs Blackwell's block-scaled MMA (compute capability 10.0+, torchao docs/mxfp8)."""
    if opts.precision != "fp8":
        return
    if not meets(accelerator, "fp8_peak"):
        raise InputError(
            f"{accelerator.id} has no FP8 tensor cores, so --precision fp8 cannot train on it.",
            hint="Use --precision bf16, or an FP8 part (Ada, Hopper, Blackwell, MI300).",
        )
    if opts.float8_scaling == "mxfp8" and not meets(accelerator, "cc>=10.0"):
        capability = compute_capability(accelerator.id)
        raise InputError(
            f"--float8-scaling mxfp8 needs Blackwell block-scaled FP8 (compute capability 10.0+); "
            f"{accelerator.id} has {capability if capability is not None else 'none listed'}.",
            hint="Use --float8-scaling tensorwise or rowwise on this part.",
        )


def _factors(accelerator_id: str, calibration: Mapping[str, float] | None) -> TrainingFactors:
    """The catalog's factors are read once per device (a sweep asks thousands of times)."""
    if calibration:
        return training_factors(accelerator_id, calibration)
    return catalog_training_factors(accelerator_id)


@dataclass(frozen=True)
class _Setup:
    """What every plan of one ``plan_training`` call shares: the options, the model and its
    geometry, the fabric, the efficiency factors and the GPU count."""

    opts: TrainOptions
    spec: ModelSpec
    geo: Geometry
    fabric: Fabric
    factors: TrainingFactors
    gpus: int

    def workload(self, seq: int) -> Workload:
        return _workload(self.opts, self.spec, self.gpus, seq)

    def plan_at(self, ev: Evaluation, index: int, work: Workload) -> TrainingPlan:
        """The plan of layout ``index`` of an evaluation."""
        return plan_from(
            ev,
            index,
            work=work,
            model=self.spec.name,
            fabric=self.fabric,
            factors=self.factors,
            price=_price(self.opts, self.fabric),
            goodput=self.opts.goodput,
        )

    def infeasible(self, layout: Layout | None, reason: str) -> TrainingPlan:
        return TrainingPlan(
            fits=False,
            reason=reason,
            model=self.spec.name,
            accelerator=self.fabric.accelerator.id,
            gpus=self.gpus,
            layout=layout,
            memory_per_gpu=None,
            step=None,
        )


def _plan(setup: _Setup, work: Workload) -> TrainingPlan:
    if setup.opts.search:
        return _searched(setup, work)
    return continued(setup, work, _single(setup, work))


def continued(
    setup: _Setup, work: Workload, plan: TrainingPlan, search: Search = search_layouts
) -> TrainingPlan:
    """The plan of the given (or default) layout, or, when it does not fit and some layout
    flags are free, the best layout a search over them finds (a note says so)."""
    if not needs_search(setup, plan):
        return plan
    free = _free_flags(setup.opts)
    found = _searched(setup, work, search)
    tried = found.search.generated if found.search else 0
    if not found.fits:
        reason = f"{plan.reason}; a search of {tried} layouts over {', '.join(free)} found none"
        return replace(plan, reason=reason, search=found.search)
    layout = _short(plan.layout) if plan.layout else "default"
    needs = plan.reason.split(" (")[0]
    note = f"the default layout ({layout}) does not fit ({needs}); searched {tried} layouts"
    note += f" over {', '.join(free)} instead"
    return noted(found, note)


def _free_flags(opts: TrainOptions) -> list[str]:
    return [name for name in (*_LAYOUT_FLAGS, "sequence_parallel") if getattr(opts, name) is None]


def needs_search(setup: _Setup, plan: TrainingPlan) -> bool:
    """Whether ``continued`` searches: the plan does not fit, for memory, and flags are free."""
    return not plan.fits and plan.memory_per_gpu is not None and bool(_free_flags(setup.opts))


def _longest_seq(setup: _Setup) -> TrainingPlan:
    """The longest sequence (a multiple of 256, up to the model's context) that fits."""
    opts, spec, gpus = setup.opts, setup.spec, setup.gpus

    def attempt(seq: int) -> TrainingPlan:
        return _plan(setup, _workload(opts, spec, gpus, seq))

    context = int(getattr(spec, "max_context", 0) or 0)
    seq: int
    plan: TrainingPlan
    seq, plan = longest_fitting(attempt, context, SEQ_STEP)
    if not plan.fits:
        return replace(plan, reason=f"not even {SEQ_STEP} tokens fit: {plan.reason}")
    limit = "the model's context" if seq + SEQ_STEP > context else f"{seq + SEQ_STEP} does not"
    return noted(plan, f"longest sequence that fits: {seq} tokens ({limit})")


def _single(setup: _Setup, work: Workload) -> TrainingPlan:
    layout = given_layout(setup.opts, work, setup.gpus)
    lay = LayoutArrays.from_layouts([layout])
    rules = prune_rules(setup.geo, work, lay, setup.gpus, setup.fabric.gpus_per_node)
    found = broken_layout_plan(setup, layout, [reason for reason, bad in rules if bad[0]])
    if found is not None:
        return found
    ev = evaluate(setup.geo, work, lay, setup.fabric, setup.factors)
    return setup.plan_at(ev, 0, work)


def broken_layout_plan(setup: _Setup, layout: Layout, broken: list[str]) -> TrainingPlan | None:
    """The infeasible plan of a layout that breaks the rules ``broken`` (None: it breaks
    none that matter). A user (or a framework preset) may ask for SP with tp=1 or ZeRO with
    one data-parallel rank (both no-ops), or TP without SP: all are valid layouts."""
    broken = [b for b in broken if not b.startswith(("sequence parallel", "ZeRO needs"))]
    if layout.gpus > setup.gpus:  # more than the rig: say so, not that it does not divide it
        broken = [b for b in broken if not b.startswith("GPUs not divisible")]
        broken.insert(0, f"the layout needs {layout.gpus:,} GPUs; the rig has {setup.gpus:,}")
    if broken:
        return setup.infeasible(layout, "; ".join(broken) + f" (layout {_short(layout)})")
    return None


def _short(layout: Layout) -> str:
    return (
        f"tp={layout.tp} pp={layout.pp} dp={layout.dp} cp={layout.cp} "
        f"mb={layout.micro_batch} on {layout.gpus} GPUs"
    )


def _searched(setup: _Setup, work: Workload, search: Search = search_layouts) -> TrainingPlan:
    opts, gpus = setup.opts, setup.gpus
    result = search(*search_args(setup, work))
    if result.evaluation is None or result.feasible == 0:
        counts = ", ".join(f"{n} {reason}" for reason, n in result.pruned.items())
        given = _model_parallel(opts) * (opts.dp or 1)
        if given > gpus:  # the sizes given alone are too many: say so, not that they do not divide
            counts = (
                f"the sizes given (tp x pp x cp x dp) need {given:,} GPUs; the rig has {gpus:,}"
            )
        plan = setup.infeasible(None, f"no layout of {gpus} GPUs works: {counts}")
        return replace(plan, search=result.stats())
    plans = [setup.plan_at(result.evaluation, int(i), work) for i in result.order[: opts.top]]
    return replace(plans[0], search=result.stats(), alternatives=tuple(plans[1:]))


def search_args(setup: _Setup, work: Workload) -> tuple[Any, ...]:
    """The arguments of ``search_layouts`` for a setup's free flags (the given ones fixed)."""
    opts = setup.opts
    fixed = {name: getattr(opts, name) for name in _LAYOUT_FLAGS}
    fixed["sequence_parallel"] = (
        None if opts.sequence_parallel is None else int(opts.sequence_parallel)
    )
    shared = (setup.geo, work, setup.fabric, setup.factors, setup.gpus)
    return (*shared, fixed, opts.objective, opts.allow_fewer_gpus)


__all__ = ["OBJECTIVES", "TrainOptions", "TrainingPlan", "fabric_of", "plan_training"]
