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
    build_stages,
    can_offload,
    device_class,
    engine_overheads,
    offload_fraction,
    stage_memory,
    summarize,
)
from rigwise.estimate.power import capped_inference
from rigwise.estimate.serving import ServingEstimate, serve_plan
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
    offload: Literal["auto", "none"] = "none"
    host: str | None = None  # CPU platform (catalog CPU row) whose RAM takes offloaded weights
    split: Literal["layer", "tensor"] | None = None
    tp: int | None = Field(None, ge=1, le=MAX_DEVICES)
    pp: int | None = Field(None, ge=1, le=MAX_DEVICES)
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
            return int(parse_count(value))
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

    @property
    def fits(self) -> bool:
        return self.verdict != DOES_NOT_FIT

    @property
    def ttft_s(self) -> float | None:
        return self.prefill.seconds if self.prefill else None

    def to_dict(self) -> dict[str, Any]:
        return {
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
        }


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


_ENGINE_VENDORS = {"mlx": ("apple",), "tensorrt-llm": ("nvidia",)}  # engines tied to one vendor


def _check_engine(engine: str, cluster: Cluster) -> None:
    vendors = _ENGINE_VENDORS.get(engine)
    if vendors is None:
        return
    for node, _ in cluster.runs:
        if node.accelerator.vendor.lower() not in vendors:
            raise InputError(
                f"--engine {engine} does not run on {node.accelerator.id} "
                f"({node.accelerator.vendor}).",
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
    return build_stages(
        cluster,
        split,
        options.tp,
        options.pp,
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
    context = opts.context or opts.prompt + opts.gen
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
    stages = _with_host(_stages(opts, cluster, engine, spec.num_layers), opts.host)
    used = sum(s.tp for s in stages)
    if used < cluster.accelerator_count:  # a pipeline has at most one stage per layer
        notes.append(
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
    reserved = 1 if opts.concurrency == "max" else opts.concurrency
    kv_bytes = spec.kv_cache_bytes(context, kv_dtype) * reserved
    memory = _memory(spec, stages, ctx, kv_bytes, engine)
    if memory.verdict == DOES_NOT_FIT and opts.offload == "auto":
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
        memory=memory,
    )
    if memory.verdict == DOES_NOT_FIT:
        return InferencePlan(
            **base, verdict=memory.verdict, reason=memory.reason, prefill=None, decode=None,
            serving=None, notes=tuple(notes),
        )  # fmt: skip
    network = cluster.network
    prefill = prefill_phase(ctx, stages, network, opts.prompt)
    decode = decode_phase(ctx, stages, network, opts.prompt + opts.gen // 2)
    power = None
    if opts.power_limit is not None:
        gpus = tuple(s.accelerator for s in stages for _ in range(s.tp))
        prefill, decode, power = capped_inference(gpus, opts.power_limit, prefill, decode)
    serving = serve_plan(
        ctx, stages, memory, network, opts.concurrency, opts.prompt, opts.gen, context, prefill
    )
    latency = _latency(opts.latency_budget, prefill, decode)
    return InferencePlan(
        **base,
        verdict=memory.verdict,
        reason=memory.reason,
        prefill=prefill,
        decode=decode,
        serving=serving,
        latency=latency,
        power=power,
        notes=tuple(notes),
    )


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
