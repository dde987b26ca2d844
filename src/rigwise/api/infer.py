"""``plan_inference(options) -> InferencePlan``: the inference planner's public entry point.

The options are one typed, frozen ``InferOptions`` (``rigwise.api.infer_options``; each field
documented where it is declared). How the model is laid on the devices (defaults, stages,
memory, offload) is ``rigwise.api.infer_stages``; disaggregated pools are
``rigwise.api.infer_disagg``; this module puts a plan together and adds its speeds.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from rigwise.api.context import request_too_long, require_context_length
from rigwise.api.infer_memory import (
    IdleNote,
    fitted_memory,
    idle_devices,
    idle_notes,
    memory_of,
    with_host,
)
from rigwise.api.infer_options import ENGINES, MAX_CONTEXT_TOKENS, InferOptions
from rigwise.api.infer_stages import (
    DEFAULT_QUANT,
    canonical_quant,
    check_engine,
    check_host_used,
    check_kv,
    check_weights,
    cluster_of,
    default_engine,
    default_kv,
    default_layout,
    default_quant,
    file_quant,
    model_of,
    overheads,
    stages_of,
)
from rigwise.api.levers import suggest_levers
from rigwise.errors import InputError
from rigwise.estimate.engine_overheads import EngineOverheads
from rigwise.estimate.engine_rules import released_format
from rigwise.estimate.gemm_tiles import tile_note
from rigwise.estimate.inference import Context, Phase, decode_phase, prefill_phase
from rigwise.estimate.inference_efficiency import catalog_efficiency, efficiency
from rigwise.estimate.inference_memory import MemoryBreakdown
from rigwise.estimate.inference_stages import Stage
from rigwise.estimate.plan_intervals import INFERENCE_FINISH
from rigwise.estimate.serving_layout import (
    check_expert_parallel,
    check_rules,
    engine_context,
    serve_with_queue,
)
from rigwise.hardware import Cluster, Link
from rigwise.models import ModelSpec
from rigwise.option_fields import option_names
from rigwise.plans import (
    DOES_NOT_FIT,
    InferenceLayout,
    InferencePlan,
    InferenceWorkload,
    LatencyCheck,
    StageShare,
)
from rigwise.serialize import register_json_finish
from rigwise.units import parse_seconds
from rigwise.validate_input import check_option_names, merged_options, validated

T = TypeVar("T")

# P10-P90 ranges beside the numbers in the plan's JSON: estimate/plan_intervals.py
register_json_finish(InferencePlan, *INFERENCE_FINISH)


def plan_inference(options: InferOptions | None = None, /, **fields: object) -> InferencePlan:
    """Plan one inference deployment: will it fit, how fast, and what would change that.

    Pass an ``InferOptions``, or its fields as keywords (``model="llama-3.1-8b",
    on="rtx-4090"``), or both (keywords override); every field is documented on
    ``InferOptions``. ``context="max"`` / ``prompt="max"``: the largest that fits
    (``rigwise.api.context``). Bad input raises ``InputError`` naming the value; "does not
    fit" is a plan with ``fits=False`` and its reason.
    """
    fields = _max_spelled(fields)
    if "max" in (fields.get("context"), fields.get("prompt")):
        from rigwise.api.context import plan_with_max

        given = merged_options(options, fields)
        spec = model_of(str(given["model"]))
        at_max: InferencePlan = plan_with_max(given, plan_inference, _replan, spec)
        return at_max
    opts = _options(options, fields)
    plan = _plan(opts)
    if opts.levers:
        plan = replace(plan, levers=suggest_levers(opts, plan, _plan))
    return plan


def _max_spelled(fields: dict[str, object]) -> dict[str, object]:
    """'MAX' or ' Max ' for prompt, context or concurrency is 'max', as train reads --seq."""
    for key in ("prompt", "context", "concurrency"):
        value = fields.get(key)
        if isinstance(value, str) and value != "max" and value.strip().lower() == "max":
            fields = {**fields, key: "max"}
    return fields


def _options(options: InferOptions | None, fields: Mapping[str, object]) -> InferOptions:
    if options is not None and not fields:
        return options
    given = merged_options(options, fields)
    check_option_names(given, option_names(InferOptions), "infer")
    return validated(InferOptions, given, "Bad option", "See `rigwise infer --help`.")


def _replan(fields: Mapping[str, object]) -> InferencePlan:
    """Plan from option fields without levers (for ``context="max"``)."""
    return _plan(_options(None, {**fields, "levers": False}))


def _context(
    opts: InferOptions, spec: ModelSpec, engine: str, stages: tuple[Stage, ...], notes: list[str]
) -> int:
    require_context_length(spec)
    context = opts.context or engine_context(
        engine, stages, opts.prompt + opts.gen, spec.max_context
    )
    if context > spec.max_context and opts.context is None:
        request_too_long(opts.prompt, opts.gen, spec)
    if context > spec.max_context:
        raise InputError(
            f"--context {context} is longer than {spec.name}'s {spec.max_context} tokens.",
            hint=f"Use --context {spec.max_context} or less.",
        )
    if context < opts.prompt:
        raise InputError(
            f"--context {context} cannot hold the {opts.prompt}-token prompt.",
            hint=f"Use --context {opts.prompt + opts.gen} (prompt + gen) or a shorter --prompt.",
        )
    if context < opts.prompt + opts.gen:
        notes.append("--context is shorter than prompt + gen; the KV cache is sized for --context.")
    return context


@dataclass(frozen=True)
class _Setup:
    """What a plan's devices, engine and formats are: everything but the request's sizes
    (prompt, gen, context), the offload choice and what is checked against the speeds. Sweeps
    (``--queries``, charts, levers) plan many sizes on one setup, so it is made once."""

    layout_update: Mapping[str, Any] | None  # default_layout's tp/pp/dp, when it chose them
    layout_note: str | None
    spec: ModelSpec
    cluster: Cluster
    stages: tuple[Stage, ...]
    ctx: Context
    idle_notes: tuple[IdleNote, ...]
    memo: dict[str, object] = field(default_factory=dict, compare=False)

    def once(self, name: str, stages: tuple[Stage, ...], make: Callable[[], T]) -> T:
        """``make()``, made once per setup for its own stages (offloaded ones: each time)."""
        if stages is not self.stages:
            return make()
        if name not in self.memo:
            self.memo[name] = make()
        return self.memo[name]  # type: ignore[return-value]


# The options a setup depends on (the rest vary per request): see _setup.
_SETUP_FIELDS = (
    "model", "on", "nodes", "network", "cluster", "quant", "kv_quant", "concurrency", "engine",
    "host", "split", "tp", "pp", "dp", "ep", "attention_dp", "engine_build", "max_batch",
    "api_server",
)  # fmt: skip
_setup_key = operator.attrgetter(*_SETUP_FIELDS)
_SETUPS: dict[tuple[object, ...], _Setup] = {}
_SETUPS_LIMIT = 4096


def _setup_of(opts: InferOptions) -> _Setup:
    """``_setup(opts)``, cached by the options it reads (not for calibration factors or
    disaggregated pools, whose dict values are rare and unhashable)."""
    if opts.calibration is not None or opts.disagg is not None:
        return _setup(opts)
    key = _setup_key(opts)
    found = _SETUPS.get(key)
    if found is None:
        found = _setup(opts)
        if len(_SETUPS) >= _SETUPS_LIMIT:
            _SETUPS.clear()
        _SETUPS[key] = found
    return found


def _setup(opts: InferOptions) -> _Setup:
    spec = model_of(opts.model)
    cluster = cluster_of(opts.on, opts.nodes, opts.network, opts.cluster)
    check_expert_parallel(spec, opts.ep, cluster=cluster)
    engine = opts.engine or default_engine(cluster, opts.concurrency)
    check_engine(engine, cluster)
    quant = canonical_quant(
        opts.quant
        or file_quant(spec)
        or released_format(opts.model, spec.name, engine)
        or default_quant(engine)
    )
    check_weights(engine, quant)
    kv_dtype = opts.kv_quant or default_kv(engine, quant)
    check_kv(engine, kv_dtype)
    laid, layout_note = default_layout(opts, cluster, engine, spec, quant)
    update = None if laid is opts else {k: getattr(laid, k) for k in ("tp", "pp", "dp")}
    stages = with_host(stages_of(laid, cluster, engine, spec.num_layers), opts.host)
    ctx = Context(
        spec=spec,
        engine=engine,
        quant=quant,
        kv_dtype=kv_dtype,
        weights_bytes=spec.weights_bytes(quant),
        overheads=_served(overheads(engine, stages[0].accelerator), opts.api_server),
        offload_efficiency=catalog_efficiency(engine, "cpu", quant.lower()),
        calibration=opts.calibration,
        engine_build=opts.engine_build,
        max_sequences=opts.max_batch,
    )
    idle = tuple(idle_devices(laid, cluster, stages, spec.num_layers, layout_note))
    return _Setup(update, layout_note, spec, cluster, stages, ctx, idle)


def _served(found: EngineOverheads, api_server: bool) -> EngineOverheads:
    """The engine's overheads, without the API server's per-token cap where none runs
    (``InferOptions.api_server`` False: the engine driven in-process)."""
    return found if api_server else replace(found, frontend_token_s=0.0)


def _plan(opts: InferOptions) -> InferencePlan:
    if opts.disagg is not None:
        from rigwise.api.infer_disagg import check_pool_options

        check_pool_options(opts)
    check_host_used(opts.host, opts.offload)  # the offload is not part of the cached setup
    setup = _setup_of(opts)
    spec, cluster, ctx = setup.spec, setup.cluster, setup.ctx
    if opts.power_limit is not None:  # per device: each must accept it (nvidia-smi -pl)
        from rigwise.hardware.power_limits import check_power_limit

        check_power_limit(opts.power_limit, (node.accelerator for node, _ in cluster.runs))
    engine, quant, kv_dtype = ctx.engine, ctx.quant, ctx.kv_dtype
    if setup.layout_update is not None:
        opts = replace(opts, **setup.layout_update)
    stages = setup.stages
    notes: list[str] = [setup.layout_note] if setup.layout_note else []
    context = _context(opts, spec, engine, stages, notes)
    after: list[str] = []  # the notes after the idle devices' (whose hints wait for the memory)
    if opts.nodes > 1 and setup.cluster.network is None:
        after.append(
            "No --network: transfers between nodes are not costed (e.g. --network ib-ndr)."
        )
    for stage in stages:  # validate calibration keys early, once
        efficiency(engine, stage, quant, opts.calibration)
    kv_bytes = spec.kv_cache_bytes(context, kv_dtype)  # one request must fit; more may queue
    hinted = any(n.dp_hint for n in setup.idle_notes)
    stages, memory = fitted_memory(opts, stages, ctx, kv_bytes, after, hinted)
    notes += idle_notes(setup.idle_notes, memory) + after
    # the plan's fields, the speeds added below before it is made (made once: a frozen
    # dataclass of 20 fields, replaced, was made twice per plan)
    fields: dict[str, Any] = dict(
        model=spec.name,
        hardware=_hardware_label(opts, setup.cluster.network),
        engine=engine,
        quant=quant,
        kv_quant=kv_dtype,
        verdict=memory.verdict,
        reason=memory.reason,
        layout=setup.once("layout", stages, lambda: _layout(opts, stages)),
        workload=InferenceWorkload(opts.prompt, opts.gen, context, opts.concurrency),
        memory=memory,
        prefill=None,
        decode=None,
        serving=None,
        notes=tuple(notes),
        device_kinds=tuple(s.accelerator.kind for s in stages),
    )
    if opts.disagg is not None:
        from rigwise.api.infer_disagg import plan_disagg_pools

        return plan_disagg_pools(opts, cluster, ctx, InferencePlan(**fields))
    broken = setup.once("rules", stages, lambda: check_rules(engine, spec, stages, quant))
    if broken is not None:
        fields.update(verdict=DOES_NOT_FIT, reason=broken.reason, broken_rule=broken.rule)
    elif memory.verdict != DOES_NOT_FIT:
        fields.update(_speeds(fields, opts, setup, stages, kv_bytes))
    return InferencePlan(**fields)


def _hardware_label(opts: InferOptions, network: Link | None) -> str:
    if opts.cluster:
        return opts.cluster
    if opts.nodes > 1:  # the link planned over: the one asked for, else the cluster's own
        link = opts.network or (network.id if network is not None else "no network given")
        return f"{opts.nodes} nodes of {opts.on} over {link}"
    return str(opts.on)


def _layout(opts: InferOptions, stages: tuple[Stage, ...]) -> InferenceLayout:
    return InferenceLayout(
        split=opts.split or ("tensor" if any(s.tp > 1 for s in stages) else "layer"),
        tp=max(s.tp for s in stages),
        pp=len(stages),
        dp=opts.dp,
        ep=opts.ep,
        attention_dp=opts.attention_dp,
        gpus=opts.dp * sum(s.tp for s in stages),
        stages=tuple(StageShare(s.label, s.layer_fraction) for s in stages),
    )


def _speeds(
    plan: Mapping[str, Any],
    opts: InferOptions,
    setup: _Setup,
    stages: tuple[Stage, ...],
    kv_bytes: float,
) -> dict[str, Any]:
    """Prefill, decode, serving (a running batch and a queue) and the latency check of a plan
    whose single request fits (``kv_bytes``: its KV cache, whose memory the plan holds): the
    plan's fields they set (``plan``: its fields so far); the verdict stays the single
    request's."""
    ctx, network = setup.ctx, setup.cluster.network
    first: MemoryBreakdown = plan["memory"]

    def memory_for(kv: float) -> MemoryBreakdown:
        if kv == kv_bytes:  # a batch of one: the memory already made
            return first
        if kv == 0.0:  # no KV cache: the same for every request of this setup
            return setup.once(
                "free", stages, lambda: memory_of(ctx.spec, stages, ctx, 0.0, ctx.engine)
            )
        return memory_of(ctx.spec, stages, ctx, kv, ctx.engine)

    prefill = prefill_phase(ctx, stages, network, opts.prompt)
    decode = decode_phase(ctx, stages, network, opts.prompt + opts.gen // 2)
    power = None
    if opts.power_limit is not None:
        gpus = tuple(s.accelerator for s in stages for _ in range(s.tp))
        from rigwise.estimate.power import capped_inference  # only under a power cap

        prefill, decode, power = capped_inference(gpus, opts.power_limit, prefill, decode)
    serving, memory = serve_with_queue(
        ctx,
        stages,
        network,
        memory_for,
        (opts.concurrency, opts.prompt, opts.gen, plan["workload"].context),
        prefill,
        opts.max_batch,
        opts.dp,
    )
    latency = _latency(opts.latency_budget, prefill, decode)
    tiles = tile_note(decode.parts, decode.seconds, opts.engine_build)
    return {
        "notes": plan["notes"] + tiles,
        "memory": memory,
        "prefill": prefill,
        "decode": decode,
        "serving": serving,
        "latency": latency,
        "power": power,
    }


def _latency(budget: str | None, prefill: Phase, decode: Phase) -> LatencyCheck | None:
    if budget is None:
        return None
    seconds = parse_seconds(budget)
    return LatencyCheck(
        budget_s=seconds,
        ttft_s=prefill.seconds,
        seconds_per_token=decode.seconds,
        ttft_meets_budget=prefill.seconds <= seconds,
        token_meets_budget=decode.seconds <= seconds,
    )


__all__ = [
    "DEFAULT_QUANT",
    "ENGINES",
    "MAX_CONTEXT_TOKENS",
    "InferOptions",
    "InferencePlan",
    "default_engine",
    "plan_inference",
]
