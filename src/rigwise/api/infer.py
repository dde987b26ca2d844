"""``plan_inference(**options) -> InferencePlan``: the inference planner's public entry point.

Options are the CLI's long option names with ``_`` for ``-`` (``model``, ``on``, ``nodes``,
``network``, ``cluster``, ``quant``, ``kv_quant``, ``prompt``, ``gen``, ``context``,
``concurrency``, ``engine``, ``offload``, ``split``, ``tp``, ``pp``, ``latency_budget``,
``calibration``, ``levers``), validated by pydantic; used by the CLI, ``--queries``, the web UI
and the build designer. Model and hardware lookups are cached so sweeps run thousands of plans
per second.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rigwise.api._lookup import cached_cluster, cached_model
from rigwise.errors import InputError, validation_message
from rigwise.estimate.inference import (
    Context,
    Phase,
    catalog_efficiency,
    decode_phase,
    efficiency,
    prefill_phase,
)
from rigwise.estimate.inference_memory import (
    DOES_NOT_FIT,
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
from rigwise.estimate.serving import ServingEstimate
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
from rigwise.units import parse_count, parse_seconds

ENGINES = ("llama.cpp", "vllm", "sglang", "tensorrt-llm", "transformers", "mlx", "ollama")
_GGUF_ENGINES = ("llama.cpp", "ollama")
MAX_CONTEXT_TOKENS = 100_000_000  # prompt, gen and context: 10^8 tokens, ~10x the longest models
_DEFAULT_QUANT = {"llama.cpp": "Q4_K_M", "ollama": "Q4_K_M", "mlx": "Q4_0"}
_DEFAULT_KV = {"llama.cpp": "f16", "ollama": "f16", "mlx": "f16"}


class InferOptions(BaseModel):
    """The options of ``rigwise infer``; unknown keys are an error naming the key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    on: str | None = None
    nodes: int = Field(1, ge=1, le=100_000)
    network: str | None = None
    cluster: str | None = None
    quant: str | None = None
    kv_quant: str | None = None
    prompt: int = Field(512, ge=1, le=MAX_CONTEXT_TOKENS)
    gen: int = Field(128, ge=1, le=MAX_CONTEXT_TOKENS)
    context: int | None = Field(None, ge=1, le=MAX_CONTEXT_TOKENS)
    concurrency: int | Literal["max"] = 1
    engine: str | None = None
    offload: Literal["auto", "none"] | None = None  # None: the engine's default (Ollama: auto)
    host: str | None = None  # CPU platform (catalog CPU row) whose RAM takes offloaded weights
    split: Literal["layer", "tensor"] | None = None
    tp: int | None = Field(None, ge=1, le=MAX_DEVICES)
    pp: int | None = Field(None, ge=1, le=MAX_DEVICES)
    dp: int = Field(1, ge=1, le=MAX_DEVICES)  # replicas of the tp x pp layout
    ep: int = Field(1, ge=1, le=MAX_DEVICES)  # expert-parallel ranks within tp (MoE)
    attention_dp: int = Field(1, ge=1, le=MAX_DEVICES)  # attention data-parallel ranks within tp
    max_batch: int | None = Field(None, ge=1, le=1_000_000)  # running sequences per replica
    disagg: dict[str, dict[str, int]] | None = None  # {"prefill": {...}, "decode": {...}}
    latency_budget: str | None = None
    power_limit: float | None = Field(None, gt=0)  # board power cap per device, watts
    calibration: dict[str, float] | None = None
    levers: bool = True

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


@dataclass(frozen=True)
class InferencePlan:
    model: str
    hardware: str
    engine: str
    quant: str
    kv_quant: str
    layout: Mapping[str, Any]
    workload: Mapping[str, Any]
    verdict: str
    reason: str
    memory: MemoryBreakdown
    prefill: Phase | None
    decode: Phase | None
    serving: ServingEstimate | None
    latency: Mapping[str, Any] | None = None
    levers: tuple[Any, ...] = ()
    notes: tuple[str, ...] = field(default=())
    device_kinds: tuple[str, ...] = ()  # gpu | unified | cpu ... of the stages (for levers)
    power: Mapping[str, Any] | None = None  # with power_limit: speed kept, watts, J/token
    broken_rule: str = ""  # the engine rule (engine_rules.csv) this layout breaks, if any

    @property
    def fits(self) -> bool:
        return self.verdict != DOES_NOT_FIT

    @property
    def ttft_s(self) -> float | None:
        return self.prefill.seconds if self.prefill else None

    def to_dict(self) -> dict[str, Any]:
        data = {
            "model": self.model,
            "hardware": self.hardware,
            "engine": self.engine,
            "quant": self.quant,
            "kv_quant": self.kv_quant,
            "fits": self.fits,
            "verdict": self.verdict,
            "reason": self.reason,
            "layout": dict(self.layout),
            "workload": dict(self.workload),
            "memory": self.memory.to_dict(),
            "prefill": self.prefill.to_dict() if self.prefill else None,
            "decode": self.decode.to_dict(per_token=True) if self.decode else None,
            "ttft_s": self.ttft_s,
            "serving": self.serving.to_dict() if self.serving else None,
            "latency": dict(self.latency) if self.latency else None,
            "levers": [lever.to_dict() for lever in self.levers],
            "power": dict(self.power) if self.power else None,
            "notes": list(self.notes),
            "broken_rule": self.broken_rule or None,
        }
        return add_inference_intervals(data)  # P10-P90 ranges: estimate/plan_intervals.py


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


def plan_inference(**options: Any) -> InferencePlan:
    """Plan one inference deployment; see ``InferOptions`` for the options.

    ``context="max"`` / ``prompt="max"``: the largest that fits (``rigwise.api.context``)."""
    if "max" in (options.get("context"), options.get("prompt")):
        from rigwise.api.context import plan_with_max

        spec = _model(str(options["model"]))
        return plan_with_max(options, plan_inference, _plan_quiet, spec)  # type: ignore[no-any-return,unused-ignore]
    try:
        opts = InferOptions(**options)
    except ValidationError as exc:
        message = validation_message(exc, "Bad option")
        raise InputError(message, hint="See `rigwise infer --help`.") from None
    plan = _plan(opts)
    if opts.levers:
        from rigwise.estimate.levers import suggest_levers

        plan = _replace_levers(plan, suggest_levers(opts.model_dump(), plan, _plan_quiet))
    return plan


def _plan_quiet(options: Mapping[str, Any]) -> InferencePlan:
    """A lever's plan: options outside the bounds (one node past the maximum) are bad input."""
    try:
        opts = InferOptions(**{**options, "levers": False})
    except ValidationError as exc:
        raise InputError(validation_message(exc, "Bad option")) from None
    return _plan(opts)


def _replace_levers(plan: InferencePlan, levers: tuple[Any, ...]) -> InferencePlan:
    from dataclasses import replace

    return replace(plan, levers=levers)


def _plan(opts: InferOptions) -> InferencePlan:
    spec = _model(opts.model)
    cluster = _cluster(opts.on, opts.nodes, opts.network, opts.cluster)
    engine = opts.engine or default_engine(cluster, opts.concurrency)
    _check_engine(engine, cluster)
    quant = _canonical_quant(opts.quant or _default_quant(engine, cluster))
    kv_dtype = opts.kv_quant or _default_kv(engine, quant)
    stages = _with_host(_stages(opts, cluster, engine, spec.num_layers), opts.host)
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
    notes: list[str] = []
    if context < opts.prompt + opts.gen:
        notes.append("--context is shorter than prompt + gen; the KV cache is sized for --context.")
    used = sum(s.tp for s in stages)
    if used < cluster.accelerator_count and opts.dp == 1 and opts.disagg is None:
        notes.append(  # a pipeline has at most one stage per layer
            f"Only {used:,} of the {cluster.accelerator_count:,} devices hold layers "
            f"({spec.num_layers} layers, one pipeline stage per layer at most); the rest idle."
        )
    cpu_eff = catalog_efficiency(engine, "cpu", quant.lower())
    ctx = Context(
        spec=spec,
        engine=engine,
        quant=quant,
        kv_dtype=kv_dtype,
        weights_bytes=spec.weights_bytes(quant),
        overheads=_overheads(engine, stages[0].accelerator),
        offload_efficiency=cpu_eff,
        calibration=opts.calibration,
    )
    for stage in stages:  # validate calibration keys early, once
        efficiency(engine, stage, quant, opts.calibration)
    kv_bytes = spec.kv_cache_bytes(context, kv_dtype)  # one request must fit; more may queue
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
    hardware = opts.cluster or (
        f"{opts.nodes} nodes of {opts.on} over {opts.network}" if opts.nodes > 1 else str(opts.on)
    )
    layout = {
        "split": opts.split or ("tensor" if any(s.tp > 1 for s in stages) else "layer"),
        "tp": max(s.tp for s in stages),
        "pp": len(stages),
        "dp": opts.dp,
        "ep": opts.ep,
        "attention_dp": opts.attention_dp,
        "gpus": opts.dp * sum(s.tp for s in stages),
        "stages": [{"device": s.label, "layer_fraction": s.layer_fraction} for s in stages],
    }
    workload = {
        "prompt": opts.prompt,
        "gen": opts.gen,
        "context": context,
        "concurrency": opts.concurrency,
    }
    base: dict[str, Any] = dict(
        device_kinds=tuple(s.accelerator.kind for s in stages),
        model=spec.name,
        hardware=hardware,
        engine=engine,
        quant=quant,
        kv_quant=kv_dtype,
        layout=layout,
        workload=workload,
    )
    broken = check_rules(engine, spec, stages, quant)
    if opts.disagg is not None:
        return _plan_disagg(opts, cluster, ctx, context, base, notes)
    if broken is not None or memory.verdict == DOES_NOT_FIT:
        return InferencePlan(
            **base, memory=memory, verdict=DOES_NOT_FIT,
            reason=broken.reason if broken else memory.reason, prefill=None, decode=None,
            serving=None, notes=tuple(notes), broken_rule=broken.rule if broken else "",
        )  # fmt: skip
    network = cluster.network
    prefill = prefill_phase(ctx, stages, network, opts.prompt)
    decode = decode_phase(ctx, stages, network, opts.prompt + opts.gen // 2)
    power = None
    if opts.power_limit is not None:
        gpus = tuple(s.accelerator for s in stages for _ in range(s.tp))
        prefill, decode, power = capped_inference(gpus, opts.power_limit, prefill, decode)
    single = memory  # the verdict: one request must fit; the running batch fills the rest
    serving, memory = serve_with_queue(
        ctx,
        stages,
        network,
        lambda kv: _memory(spec, stages, ctx, kv, engine),
        (opts.concurrency, opts.prompt, opts.gen, context),
        prefill,
        opts.max_batch,
        opts.dp,
    )
    latency = _latency(opts.latency_budget, prefill, decode)
    return InferencePlan(
        **base,
        memory=memory,
        verdict=single.verdict,
        reason=single.reason,
        prefill=prefill,
        decode=decode,
        serving=serving,
        latency=latency,
        power=power,
        notes=tuple(notes),
    )


def _plan_disagg(
    opts: InferOptions,
    cluster: Cluster,
    ctx: Context,
    context: int,
    base: dict[str, Any],
    notes: list[str],
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
            (opts.concurrency, opts.prompt, opts.gen, context),
        )
    except _RuleBroken as exc:
        return InferencePlan(
            **{**base, "memory": _memory(ctx.spec, (), ctx, 0.0, ctx.engine)},
            verdict=DOES_NOT_FIT, reason=exc.args[1], prefill=None, decode=None, serving=None,
            notes=tuple(notes), broken_rule=exc.args[0],
        )  # fmt: skip
    layout = {**base["layout"], "disagg": {"prefill": vars(roles[0]), "decode": vars(roles[1])}}
    verdict = found.memory.verdict if found.serving is not None else DOES_NOT_FIT
    return InferencePlan(
        **{**base, "layout": layout}, memory=found.memory, verdict=verdict,
        reason=found.reason, prefill=found.prefill, decode=None, serving=found.serving,
        notes=tuple(notes),
    )  # fmt: skip


class _RuleBroken(Exception):
    """An engine rule broken by one pool's layout (a result, carried out of the callback)."""


def _latency(budget: str | None, prefill: Phase, decode: Phase) -> dict[str, Any] | None:
    if budget is None:
        return None
    seconds = parse_seconds(budget)
    return {
        "budget_s": seconds,
        "ttft_s": prefill.seconds,
        "seconds_per_token": decode.seconds,
        "ttft_meets_budget": prefill.seconds <= seconds,
        "token_meets_budget": decode.seconds <= seconds,
    }
