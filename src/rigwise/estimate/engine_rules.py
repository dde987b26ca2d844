"""What an engine refuses to run, read from ``catalog/data/engine_rules.csv``.

Rules are data (each with its source): tensor parallelism must divide the attention and KV
heads (vLLM, SGLang, TensorRT-LLM), minimum NVIDIA compute capability, engines tied to one
vendor, and weight formats that need native hardware (FP8 on Ada/Hopper+, with vLLM's
documented FP8 Marlin weight-only fallback from Turing; NVFP4 on Blackwell), and the KV-cache
dtypes an engine has an option for (``kv_violation``: bad input, as ``vendor_violation``), and
the weight formats a GGUF engine loads (``weights_violation``: bad input too).
``violation`` names the first broken rule; the planner answers "does not fit" with it, and
levers that break one are never offered (they re-plan and come back not fitting).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass

from rigwise.catalog.loader import read_csv
from rigwise.catalog.match import first_glob_row, glob_match
from rigwise.errors import RigwiseError
from rigwise.hardware import Accelerator
from rigwise.models import ModelSpec, kv_cache_format
from rigwise.units import GiB


@dataclass(frozen=True)
class Rule:
    """One row of engine_rules.csv: something an engine refuses to run, with its source."""

    name: str
    engines: tuple[str, ...]
    kind: str
    quants: tuple[str, ...]
    value: str
    source: str

    def applies(self, engine: str) -> bool:
        return any(glob_match(engine, p) for p in self.engines)


@dataclass(frozen=True)
class Violation:
    """A rule a plan breaks, with the message and the rule's source."""

    rule: str
    message: str
    source: str

    @property
    def reason(self) -> str:
        return f"Engine rule {self.rule}: {self.message}"


def _globs(text: str) -> tuple[str, ...]:
    return tuple(p.strip().lower() for p in text.split(";") if p.strip())


@functools.cache
def rules() -> tuple[Rule, ...]:
    return tuple(
        Rule(
            name=row["rule"],
            engines=_globs(row["engine"]),
            kind=row["kind"],
            quants=_globs(row["quant"]),
            value=row["value"],
            source=row["source"],
        )
        for row in read_csv("engine_rules.csv")
    )


@functools.cache
def compute_capability(accelerator_id: str) -> float | None:
    """NVIDIA compute capability of a catalog id (None where none is listed)."""
    row = first_glob_row(read_csv("compute_capability.csv"), "accelerator", accelerator_id)
    return float(row["compute_capability"]) if row else None


def meets(accelerator: Accelerator, need: str) -> bool:
    """Whether the device has a hardware requirement of engine_rules.csv's ``value`` column:
    ``fp8_peak``/``fp4_peak`` (a tensor rate in that format) or ``cc>=X`` (NVIDIA compute
    capability)."""
    if need in ("fp8_peak", "fp4_peak"):
        return bool(accelerator.flops.get(need.removesuffix("_peak")))
    if need.startswith("cc>="):
        cc = compute_capability(accelerator.id)
        return cc is not None and cc >= float(need[4:])
    raise ValueError(f"engine_rules.csv: unknown requirement {need!r}")


def _layout_violation(rule: Rule, spec: ModelSpec, attention_tp: int) -> str | None:
    heads, kv = spec.num_attention_heads, spec.num_kv_heads
    if rule.kind == "heads_divide" and heads % attention_tp:
        return f"tensor parallel {attention_tp} does not divide {spec.name}'s {heads} heads."
    if rule.kind == "kv_heads_divide" and spec.mla is None:
        ok = kv % attention_tp == 0 if kv >= attention_tp else attention_tp % kv == 0
        if not ok:
            return (
                f"tensor parallel {attention_tp} and {spec.name}'s {kv} KV heads: "
                "one must divide the other."
            )
    return None


def layout_violation(engine: str, spec: ModelSpec, attention_tp: int) -> Violation | None:
    """The first of the engine's head rules (heads_divide, kv_heads_divide) that an attention
    tensor-parallel size ``attention_tp`` breaks, or None."""
    for rule in _active(engine):
        message = _layout_violation(rule, spec, attention_tp)
        if message:
            return Violation(rule.name, message, rule.source)
    return None


def vendor_violation(engine: str, accelerators: Iterable[Accelerator]) -> Violation | None:
    """An engine tied to one vendor asked to run elsewhere (bad input, not a layout)."""
    for rule in rules():
        if rule.kind != "vendor" or not rule.applies(engine):
            continue
        for accelerator in accelerators:
            if accelerator.vendor.lower() != rule.value.lower():
                return Violation(
                    rule.name,
                    f"--engine {engine} does not run on {accelerator.id} ({accelerator.vendor}).",
                    rule.source,
                )
    return None


def kv_violation(engine: str, kv_dtype: str) -> Violation | None:
    """A KV-cache dtype the engine has no option for (``kv_dtype`` rows list the ones it has),
    bad input whatever the layout: vLLM's --kv-cache-dtype takes auto (the model's 16-bit) or
    fp8, not llama.cpp's q4_0."""
    name = kv_cache_format(kv_dtype).name.lower()
    for rule in _active(engine):
        if rule.kind != "kv_dtype":
            continue
        allowed = _globs(rule.value)
        if name not in allowed:
            planned = [a for a in allowed if _kv_format(a)]  # the ones rigwise can plan
            return Violation(
                rule.name,
                f"--engine {engine} keeps its KV cache in {', '.join(planned)}; not {kv_dtype}.",
                rule.source,
            )
    return None


def _kv_format(name: str) -> bool:
    try:
        kv_cache_format(name)
    except RigwiseError:
        return False
    return True


def weights_violation(engine: str, quant: str) -> Violation | None:
    """A weight format the engine cannot load (``weight_formats`` rows list the ones it can),
    bad input whatever the layout: llama.cpp runs GGUF tensor types, not an AWQ checkpoint."""
    name = quant.lower()
    for rule in _active(engine):
        if rule.kind == "weight_formats" and not any(
            glob_match(name, p) for p in _globs(rule.value)
        ):
            return Violation(
                rule.name,
                f"--engine {engine} cannot load {quant} weights.",
                rule.source,
            )
    return None


def _device_violation(rule: Rule, accelerator: Accelerator) -> str | None:
    if rule.kind == "min_compute_capability":
        cc = compute_capability(accelerator.id)
        if cc is not None and cc < float(rule.value):
            return f"needs compute capability {rule.value}+; {accelerator.id} has {cc}."
    return None


def _quant_violation(
    engine: str, quant: str, accelerator: Accelerator, active: list[Rule]
) -> Violation | None:
    matching = [
        r for r in active if r.kind == "quant" and any(glob_match(quant, q) for q in r.quants)
    ]
    if not matching or any(meets(accelerator, r.value) for r in matching):
        return None
    first = matching[0]
    return Violation(
        first.name,
        f"{engine} cannot run {quant.upper()} weights on {accelerator.id} "
        f"(needs {' or '.join(r.value for r in matching)}).",
        first.source,
    )


@functools.cache
def _active(engine: str) -> list[Rule]:
    return [r for r in rules() if r.applies(engine)]


def violation(
    engine: str,
    spec: ModelSpec,
    accelerators: Iterable[Accelerator],
    quant: str,
    attention_tp: Iterable[int],
) -> Violation | None:
    """The first engine rule this deployment breaks, or None."""
    active = _active(engine)
    for width in sorted(set(attention_tp)):
        found = layout_violation(engine, spec, width)
        if found:
            return found
    for accelerator in {a.id: a for a in accelerators}.values():
        for rule in active:
            message = _device_violation(rule, accelerator)
            if message:
                return Violation(rule.name, message, rule.source)
        found = _quant_violation(engine, quant.lower(), accelerator, active)
        if found:
            return found
    return None


@dataclass(frozen=True)
class EngineDefaults:
    """An engine's defaults (engine_defaults.csv): context, offload, step token budget."""

    default_context: int  # 0: prompt + gen
    auto_offload: bool
    source: str
    step_tokens: int = 0  # scheduler token budget per step; 0: engine_overheads workspace_tokens
    max_sequences: int = 0  # running sequences per replica; 0: engine_overheads max_concurrency


@functools.cache
def engine_defaults(engine: str, memory_bytes: float) -> EngineDefaults:
    """The engine's own context, offload and step-budget defaults on a memory_bytes device."""
    gib = memory_bytes / GiB
    for row in read_csv("engine_defaults.csv"):
        if not any(glob_match(engine, p) for p in _globs(row["engine"])):
            continue
        if float(row["min_vram_gb"]) <= gib < float(row["max_vram_gb"]):
            return EngineDefaults(
                int(row["default_context"]),
                row["auto_offload"].lower() == "true",
                row["source"],
                int(row.get("step_tokens") or 0),
                int(row.get("max_sequences") or 0),
            )
    return EngineDefaults(0, False, "")


def released_format(typed: str, model: str, engine: str) -> str | None:
    """The format of the release the user named, where its name tells it apart from the
    catalog ``model`` it maps to ('zai-org/GLM-4.6-FP8', an alias of glm-4.6, is the FP8
    release: its last path part, lower case, has a row of its own), else ``model``'s."""
    release = typed.strip().rsplit("/", 1)[-1].lower()
    own = native_format(release, engine) if release != model else None
    return own or native_format(model, engine)


@functools.cache
def native_format(model: str, engine: str) -> str | None:
    """The format ``model`` is released in, if ``engine`` loads that checkpoint as is
    (model_native_formats.csv); None: the engine's own default applies."""
    for row in read_csv("model_native_formats.csv"):
        if glob_match(model, row["model"]) and any(
            glob_match(engine, p) for p in _globs(row["engines"])
        ):
            return row["quant"]
    return None
