"""``plan_inference(options) -> InferencePlan``: the inference planner's public entry point.

The options are one typed, frozen ``InferOptions`` (each field documented where it is
declared; adding an option is one field and its docstring line), validated by pydantic at this
edge and shared by the CLI, ``--queries``, the web API (its query parameters) and the build
designer. Model and hardware lookups are cached so sweeps run thousands of plans per second.

Over 400 lines on purpose: a quarter of it is ``InferOptions``, one line of documentation per
field, kept next to the planner that reads every field (splitting them would make adding an
option a two-file change).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rigwise.api._lookup import cached_cluster, cached_model
from rigwise.api.levers import suggest_levers
from rigwise.errors import InputError, validation_message
from rigwise.estimate.engine_builds import normalise_build
from rigwise.estimate.engine_rules import native_format
from rigwise.estimate.inference import (
    Context,
    Phase,
    catalog_efficiency,
    decode_phase,
    efficiency,
    prefill_phase,
)
from rigwise.estimate.inference_memory import (
    MemoryBreakdown,
    Stage,
    can_offload,
    device_class,
    engine_overheads,
    offload_fraction,
    stage_memory,
    summarize,
)
from rigwise.estimate.plan_intervals import add_inference_intervals
from rigwise.estimate.power import capped_inference
from rigwise.estimate.serving_layout import (
    ReplicaLayout,
    auto_offload,
    check_rules,
    engine_context,
    replica_stages,
    serve_with_queue,
)
from rigwise.hardware import Accelerator, Cluster
from rigwise.hardware.nodes import MAX_DEVICES
from rigwise.models import ModelSpec
from rigwise.plans import (
    DOES_NOT_FIT,
    DisaggLayout,
    InferenceLayout,
    InferencePlan,
    InferenceWorkload,
    LatencyCheck,
    StageShare,
)
from rigwise.serialize import register_json_finish
from rigwise.units import parse_count, parse_seconds

# P10-P90 ranges beside the numbers in the plan's JSON: estimate/plan_intervals.py
register_json_finish(InferencePlan, add_inference_intervals)

ENGINES = ("llama.cpp", "vllm", "sglang", "tensorrt-llm", "transformers", "mlx", "ollama")
_GGUF_ENGINES = ("llama.cpp", "ollama")
MAX_CONTEXT_TOKENS = 100_000_000  # prompt, gen and context: 10^8 tokens, ~10x the longest models
_DEFAULT_QUANT = {"llama.cpp": "Q4_K_M", "ollama": "Q4_K_M", "mlx": "Q4_0"}
_DEFAULT_KV = {"llama.cpp": "f16", "ollama": "f16", "mlx": "f16"}


class InferOptions(BaseModel):
    """The options of ``rigwise infer`` (long option names with ``_``); unknown keys are an
    error naming the key. Counts accept '8k'-style strings."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    """Catalog name, HF config.json or .gguf file."""
    on: str | None = None
    """One node: 'rtx-4090', '2x rtx-3090+nvlink', 'dgx-h100', a CPU platform."""
    nodes: int = Field(1, ge=1, le=100_000)
    """Number of such nodes (with ``network``)."""
    network: str | None = None
    """Link between nodes: 10gbe, ib-ndr, thunderbolt-4 ..."""
    cluster: str | None = None
    """Heterogeneous cluster YAML file (instead of ``on``)."""
    quant: str | None = None
    """Weights format: Q4_K_M, Q8_0, BF16, FP8, AWQ-4bit-g128, NF4, MXFP4 ... (engine default)."""
    kv_quant: str | None = None
    """KV cache dtype: f16, bf16, fp8, q8_0, q4_0 (engine default)."""
    prompt: int = Field(512, ge=1, le=MAX_CONTEXT_TOKENS)
    """Prompt tokens."""
    gen: int = Field(128, ge=1, le=MAX_CONTEXT_TOKENS)
    """Generated tokens."""
    context: int | None = Field(None, ge=1, le=MAX_CONTEXT_TOKENS)
    """Context to reserve (default: prompt + gen, or the engine's own default)."""
    concurrency: int | Literal["max"] = 1
    """Concurrent requests, or 'max' (as many as the KV cache holds)."""
    engine: str | None = None
    """llama.cpp, vllm, sglang, tensorrt-llm, transformers, mlx, ollama (default by hardware)."""
    offload: Literal["auto", "none"] | None = None
    """'auto': weights that do not fit go to host RAM (default: the engine's; Ollama: auto)."""
    host: str | None = None
    """Host CPU platform (catalog CPU row) whose RAM takes offloaded weights."""
    split: Literal["layer", "tensor"] | None = None
    """How devices share the model (default by engine)."""
    tp: int | None = Field(None, ge=1, le=MAX_DEVICES)
    """Tensor-parallel size."""
    pp: int | None = Field(None, ge=1, le=MAX_DEVICES)
    """Pipeline stages."""
    dp: int = Field(1, ge=1, le=MAX_DEVICES)
    """Replicas of the tp x pp layout."""
    ep: int = Field(1, ge=1, le=MAX_DEVICES)
    """Expert-parallel ranks within tp (MoE)."""
    attention_dp: int = Field(1, ge=1, le=MAX_DEVICES)
    """Attention data-parallel ranks within tp."""
    max_batch: int | None = Field(None, ge=1, le=1_000_000)
    """Running sequences per replica (default: the engine's)."""
    disagg: dict[str, dict[str, int]] | None = None
    """Disaggregated pools: {"prefill": {...}, "decode": {...}} (tp, pp, workers, ep ...)."""
    latency_budget: str | None = None
    """Per-token / first-token budget, e.g. '200ms'."""
    power_limit: float | None = Field(None, gt=0)
    """Board power cap per device, watts (speed kept, watts and J/token in ``power``)."""
    calibration: dict[str, float] | None = None
    """Measured efficiency factors (``rigwise bench``) replacing the catalog's."""
    engine_build: str | None = None
    """Date of an older engine build, YYYY-MM[-DD], to plan with its kernels (default: current)."""
    levers: bool = True
    """Also measure the levers (changes that make it fit or run faster)."""

    @field_validator("prompt", "gen", "context", mode="before")
    @classmethod
    def _counts(cls, value: Any) -> Any:
        return int(parse_count(value)) if isinstance(value, str) else value

    @field_validator("concurrency", mode="before")
    @classmethod
    def _concurrency(cls, value: Any) -> Any:
        if isinstance(value, str) and value != "max":
            value = int(parse_count(value))
        if isinstance(value, int) and not 1 <= value <= MAX_DEVICES:
            raise ValueError(f"must be between 1 and {MAX_DEVICES:,} (or 'max')")
        return value

    @field_validator("engine_build")
    @classmethod
    def _build(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            return normalise_build(value)
        except InputError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("engine")
    @classmethod
    def _engine(cls, value: str | None) -> str | None:
        if value is None:
            return None
        name = value.lower().replace("llamacpp", "llama.cpp").replace("trt-llm", "tensorrt-llm")
        if name not in ENGINES:
            from rigwise.errors import UnknownNameError, closest

            raise UnknownNameError("engine", value, closest(name, ENGINES))
        return name


def _model(name: str) -> ModelSpec:
    return cached_model(name)


def _cluster(on: str | None, nodes: int, network: str | None, path: str | None) -> Cluster:
    return cached_cluster(on, nodes, network, path, "rtx-4090")


def _classes(cluster: Cluster) -> set[str]:
    return {device_class(node.accelerator) for node, _ in cluster.runs}


def default_engine(cluster: Cluster, concurrency: int | str) -> str:
    """llama.cpp for consumer GPUs, Apple and CPUs at batch 1; vLLM for datacenter or serving."""
    classes = _classes(cluster)
    if any(c == "cpu" or c.startswith("apple") for c in classes):
        return "llama.cpp"
    if concurrency != 1 or any(c.endswith("-hbm") for c in classes):
        return "vllm"
    return "llama.cpp"


def _check_engine(engine: str, cluster: Cluster) -> None:
    from rigwise.estimate.engine_rules import vendor_violation

    found = vendor_violation(engine, [node.accelerator for node, _ in cluster.runs])
    if found is not None:
        raise InputError(
            f"{found.message} (engine rule {found.rule})",
            hint="Use --engine llama.cpp or vllm, or leave --engine out for the default.",
        )


def _default_quant(engine: str, cluster: Cluster) -> str:
    if engine in _DEFAULT_QUANT:
        return _DEFAULT_QUANT[engine]
    return "BF16"


def _default_kv(engine: str, quant: str) -> str:
    """GGUF engines keep an f16 cache; NVIDIA's FP8/FP4 checkpoints (ModelOpt, as in the
    TensorRT-LLM perf overview) carry an FP8 KV cache (hf_quant_config.json
    kv_cache_quant_algo FP8); others keep bf16."""
    if engine in _DEFAULT_KV:
        return _DEFAULT_KV[engine]
    return "fp8" if engine == "tensorrt-llm" and quant in ("FP8", "NVFP4") else "bf16"


def _file_quant(spec: ModelSpec) -> str | None:
    """A .gguf file is planned as it is: its own file type, so that ``spec.weights_bytes``
    returns the file's real per-tensor bytes (mixed Q4_K/Q6_K/F32 tensors, MXFP4 experts)
    rather than a default format's bits per weight. None for a file type rigwise has no
    format for (the engine default applies) and for every model that is not a GGUF file."""
    if spec.gguf_quant is None:
        return None
    from rigwise.models import quant_format

    try:
        return quant_format(spec.gguf_quant).name
    except InputError:
        return None


def _canonical_quant(name: str) -> str:
    from rigwise.models import quant_format

    return quant_format(name).name


def _stages(
    options: InferOptions, cluster: Cluster, engine: str, num_layers: int
) -> tuple[Stage, ...]:
    split = options.split or ("layer" if engine in (*_GGUF_ENGINES, "mlx") else "tensor")
    return replica_stages(
        cluster,
        split,
        ReplicaLayout(options.tp, options.pp, options.dp, options.ep, options.attention_dp),
        lambda acc: engine_overheads(engine, device_class(acc)),
        max_stages=num_layers,
    )


def _memory(
    spec: ModelSpec,
    stages: tuple[Stage, ...],
    ctx: Context,
    kv_bytes: float,
    engine: str,
) -> MemoryBreakdown:
    devices = [
        stage_memory(spec, s, ctx.weights_bytes, kv_bytes, _overheads(engine, s.accelerator))
        for s in stages
    ]
    return summarize(devices, list(stages))


def _overheads(engine: str, accelerator: Accelerator) -> Any:
    return engine_overheads(engine, device_class(accelerator))


def _with_host(stages: tuple[Stage, ...], host: str | None) -> tuple[Stage, ...]:
    """Give every stage the host CPU platform's RAM size and bandwidth (for offload)."""
    if host is None:
        return stages
    from dataclasses import replace

    from rigwise.hardware import get_accelerator

    cpu = get_accelerator(host)
    if cpu.kind != "cpu":
        raise InputError(
            f"--host {host!r} is a {cpu.kind}, not a CPU platform.",
            hint="Name a CPU row, e.g. --host ryzen-9-7950x-ddr5-6000.",
        )
    return tuple(
        replace(
            s,
            host_memory_bytes=s.host_memory_bytes or cpu.memory_bytes,
            host_bandwidth_bytes_per_s=cpu.memory_bandwidth_bytes_per_s,
        )
        for s in stages
    )


def _with_offload(
    spec: ModelSpec, stages: tuple[Stage, ...], ctx: Context, kv_bytes: float, engine: str
) -> tuple[Stage, ...]:
    from dataclasses import replace

    moved = []
    for s in stages:
        share = 0.0
        if can_offload(s):
            share = offload_fraction(
                spec, s, ctx.weights_bytes, kv_bytes, _overheads(engine, s.accelerator)
            )
        moved.append(replace(s, offloaded_fraction=share))
    return tuple(moved)


def plan_inference(options: InferOptions | None = None, /, **fields: object) -> InferencePlan:
    """Plan one inference deployment: will it fit, how fast, and what would change that.

    Pass an ``InferOptions``, or its fields as keywords (``model="llama-3.1-8b",
    on="rtx-4090"``), or both (keywords override); every field is documented on
    ``InferOptions``. ``context="max"`` / ``prompt="max"``: the largest that fits
    (``rigwise.api.context``). Bad input raises ``InputError`` naming the value; "does not
    fit" is a plan with ``fits=False`` and its reason.
    """
    if "max" in (fields.get("context"), fields.get("prompt")):
        from rigwise.api.context import plan_with_max

        given = {**(options.model_dump(exclude_unset=True) if options else {}), **fields}
        spec = _model(str(given["model"]))
        at_max: InferencePlan = plan_with_max(given, plan_inference, _replan, spec)
        return at_max
    opts = _options(options, fields)
    plan = _plan(opts)
    if opts.levers:
        plan = replace(plan, levers=suggest_levers(opts, plan, _plan_quiet))
    return plan


def _options(options: InferOptions | None, fields: Mapping[str, object]) -> InferOptions:
    if options is not None and not fields:
        return options
    given = {**(options.model_dump(exclude_unset=True) if options else {}), **fields}
    try:
        return InferOptions.model_validate(given)
    except ValidationError as exc:
        message = validation_message(exc, "Bad option")
        raise InputError(message, hint="See `rigwise infer --help`.") from None


def _plan_quiet(options: InferOptions) -> InferencePlan:
    return _plan(options)


def _replan(fields: Mapping[str, object]) -> InferencePlan:
    """Plan from option fields without levers (for ``context="max"``)."""
    return _plan(_options(None, {**fields, "levers": False}))


def _context(
    opts: InferOptions, spec: ModelSpec, engine: str, stages: tuple[Stage, ...], notes: list[str]
) -> int:
    context = opts.context or engine_context(
        engine, stages, opts.prompt + opts.gen, spec.max_context
    )
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


def _plan(opts: InferOptions) -> InferencePlan:
    spec = _model(opts.model)
    cluster = _cluster(opts.on, opts.nodes, opts.network, opts.cluster)
    engine = opts.engine or default_engine(cluster, opts.concurrency)
    _check_engine(engine, cluster)
    quant = _canonical_quant(
        opts.quant
        or _file_quant(spec)
        or native_format(spec.name, engine)
        or _default_quant(engine, cluster)
    )
    kv_dtype = opts.kv_quant or _default_kv(engine, quant)
    stages = _with_host(_stages(opts, cluster, engine, spec.num_layers), opts.host)
    notes: list[str] = []
    context = _context(opts, spec, engine, stages, notes)
    used = sum(s.tp for s in stages)
    if used < cluster.accelerator_count and opts.dp == 1 and opts.disagg is None:
        notes.append(  # a pipeline has at most one stage per layer
            f"Only {used:,} of the {cluster.accelerator_count:,} devices hold layers "
            f"({spec.num_layers} layers, one pipeline stage per layer at most); the rest idle."
        )
    ctx = Context(
        spec=spec,
        engine=engine,
        quant=quant,
        kv_dtype=kv_dtype,
        weights_bytes=spec.weights_bytes(quant),
        overheads=_overheads(engine, stages[0].accelerator),
        offload_efficiency=catalog_efficiency(engine, "cpu", quant.lower()),
        calibration=opts.calibration,
        engine_build=opts.engine_build,
    )
    for stage in stages:  # validate calibration keys early, once
        efficiency(engine, stage, quant, opts.calibration)
    kv_bytes = spec.kv_cache_bytes(context, kv_dtype)  # one request must fit; more may queue
    stages, memory = _fitted_memory(opts, stages, ctx, kv_bytes, notes)
    plan = InferencePlan(
        model=spec.name,
        hardware=_hardware_label(opts),
        engine=engine,
        quant=quant,
        kv_quant=kv_dtype,
        verdict=memory.verdict,
        reason=memory.reason,
        layout=_layout(opts, stages),
        workload=InferenceWorkload(opts.prompt, opts.gen, context, opts.concurrency),
        memory=memory,
        prefill=None,
        decode=None,
        serving=None,
        notes=tuple(notes),
        device_kinds=tuple(s.accelerator.kind for s in stages),
    )
    if opts.disagg is not None:
        return _plan_disagg(opts, cluster, ctx, plan)
    broken = check_rules(engine, spec, stages, quant)
    if broken is not None:
        return replace(plan, verdict=DOES_NOT_FIT, reason=broken.reason, broken_rule=broken.rule)
    if memory.verdict == DOES_NOT_FIT:
        return plan
    return _with_speed(plan, opts, ctx, stages, cluster)


def _fitted_memory(
    opts: InferOptions,
    stages: tuple[Stage, ...],
    ctx: Context,
    kv_bytes: float,
    notes: list[str],
) -> tuple[tuple[Stage, ...], MemoryBreakdown]:
    """Memory per device; with offload (asked for, or the engine's default) and no fit,
    weights moved to host RAM."""
    spec, engine = ctx.spec, ctx.engine
    memory = _memory(spec, stages, ctx, kv_bytes, engine)
    offload = opts.offload or ("auto" if auto_offload(engine, stages) else "none")
    if memory.verdict == DOES_NOT_FIT and offload == "auto":
        stages = _with_offload(spec, stages, ctx, kv_bytes, engine)
        memory = _memory(spec, stages, ctx, kv_bytes, engine)
        if memory.host_offload_bytes:
            notes.append(
                f"{memory.host_offload_bytes / 1e9:.1f} GB of weights offloaded to host RAM."
            )
        elif not any(can_offload(s) for s in stages):
            notes.append("Offload needs --host CPU (the host's RAM size and bandwidth).")
    return stages, memory


def _hardware_label(opts: InferOptions) -> str:
    if opts.cluster:
        return opts.cluster
    if opts.nodes > 1:
        return f"{opts.nodes} nodes of {opts.on} over {opts.network}"
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


def _with_speed(
    plan: InferencePlan,
    opts: InferOptions,
    ctx: Context,
    stages: tuple[Stage, ...],
    cluster: Cluster,
) -> InferencePlan:
    """Prefill, decode, serving (a running batch and a queue) and the latency check of a plan
    whose single request fits; the verdict stays the single request's."""
    network = cluster.network
    prefill = prefill_phase(ctx, stages, network, opts.prompt)
    decode = decode_phase(ctx, stages, network, opts.prompt + opts.gen // 2)
    power = None
    if opts.power_limit is not None:
        gpus = tuple(s.accelerator for s in stages for _ in range(s.tp))
        prefill, decode, power = capped_inference(gpus, opts.power_limit, prefill, decode)
    serving, memory = serve_with_queue(
        ctx,
        stages,
        network,
        lambda kv: _memory(ctx.spec, stages, ctx, kv, ctx.engine),
        (opts.concurrency, opts.prompt, opts.gen, plan.workload.context),
        prefill,
        opts.max_batch,
        opts.dp,
    )
    latency = _latency(opts.latency_budget, prefill, decode)
    return replace(
        plan,
        memory=memory,
        prefill=prefill,
        decode=decode,
        serving=serving,
        latency=latency,
        power=power,
    )


def _plan_disagg(
    opts: InferOptions, cluster: Cluster, ctx: Context, plan: InferencePlan
) -> InferencePlan:
    """Disaggregated prefill/decode pools (estimate.serving_disagg) on the same cluster."""
    from rigwise.estimate.serving_disagg import parse_roles, plan_disagg

    roles = parse_roles(opts.disagg or {})
    total = cluster.accelerator_count
    if roles[0].gpus + roles[1].gpus > total:
        raise InputError(
            f"--disagg needs {roles[0].gpus} prefill + {roles[1].gpus} decode devices; "
            f"{total} given.",
            hint="Use fewer workers or smaller tp, or add devices (--nodes).",
        )

    def stages_for(role: Any) -> tuple[Stage, ...]:
        layout = ReplicaLayout(role.tp, role.pp, role.workers, role.ep, role.attention_dp)
        stages = _with_host(
            replica_stages(
                cluster, "tensor", layout, lambda a: _overheads(ctx.engine, a), ctx.spec.num_layers
            ),
            opts.host,
        )
        broken = check_rules(ctx.engine, ctx.spec, stages, ctx.quant)
        if broken is not None:
            raise _RuleBroken(broken.rule, broken.reason)
        return stages

    per_node = cluster.nodes[0].count
    between = cluster.network if roles[0].gpus >= per_node and len(cluster.nodes) > 1 else (
        cluster.nodes[0].intra_link
    )  # fmt: skip
    try:
        found = plan_disagg(
            ctx,
            roles,
            stages_for,
            lambda stages, kv: _memory(ctx.spec, stages, ctx, kv, ctx.engine),
            lambda stages: prefill_phase(ctx, stages, cluster.network, opts.prompt),
            (cluster.network, between),
            (opts.concurrency, opts.prompt, opts.gen, plan.workload.context),
        )
    except _RuleBroken as exc:
        return replace(
            plan, memory=_memory(ctx.spec, (), ctx, 0.0, ctx.engine), verdict=DOES_NOT_FIT,
            reason=exc.args[1], broken_rule=exc.args[0],
        )  # fmt: skip
    layout = replace(plan.layout, disagg=DisaggLayout(prefill=roles[0], decode=roles[1]))
    verdict = found.memory.verdict if found.serving is not None else DOES_NOT_FIT
    return replace(
        plan, layout=layout, memory=found.memory, verdict=verdict, reason=found.reason,
        prefill=found.prefill, serving=found.serving,
    )  # fmt: skip


class _RuleBroken(Exception):
    """An engine rule broken by one pool's layout (a result, carried out of the callback)."""


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
