"""The largest context that fits (``infer --context max``, ``--prompt max``, ``rigwise fit``).

Closed form on the memory model (estimate/inference_memory.stage_memory): on every device only
the KV cache grows with the context, and it grows in proportion to the whole model's KV bytes
(``kv_bytes x layer_fraction / kv_split``). So one plan at a short context gives each device's
headroom ratio ``(usable - other bytes) / kv bytes``; the smallest ratio bounds the KV bytes of
the whole model, and the largest context within that bound is found by bisection on
``ModelSpec.kv_cache_bytes`` (window-capped layers make it piecewise linear). No re-planning.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, NoReturn

from rigwise.catalog.loader import read_csv
from rigwise.errors import InputError, RigwiseError
from rigwise.models import ModelSpec
from rigwise.plans import InferencePlan

if TYPE_CHECKING:
    from rigwise.estimate.inference_memory import MemoryBreakdown

# Option fields by name (``InferOptions``' fields, before validation) and a planner over them.
OptionFields = Mapping[str, object]
Replan = Callable[[OptionFields], InferencePlan]

MAX = "max"
# KV dtypes a user can step down to, in the order each halves the cache again.
_KV_STEPS = {
    "f16": "q8_0",
    "fp16": "q8_0",
    "bf16": "fp8",
    "fp32": "f16",
    "f32": "f16",
    "q8_0": "q4_0",
}
_GGUF_ENGINES = ("llama.cpp", "ollama")
# The one plan the headroom is read from: a context of 2 tokens, so every device holds some KV.
_PROBE: dict[str, object] = {"context": 2, "prompt": 1, "gen": 1, "levers": False}


def default_context_tokens() -> int:
    """The sourced default context (workload_defaults.csv)."""
    row = next(r for r in read_csv("workload_defaults.csv") if r["key"] == "context_tokens")
    return int(float(row["value"]))


def require_context_length(spec: ModelSpec) -> None:
    """A plan needs the model's context length: a config.json without max_position_embeddings
    (training plans need none) said "640 tokens is longer than x's 0-token context"."""
    if spec.max_context <= 0:
        raise InputError(
            f"{spec.name}'s config gives no context length (max_position_embeddings, or "
            "n_positions / max_seq_len, is missing or 0).",
            hint='Add the longest context it was trained for ("max_position_embeddings": N; '
            '"max_seq_len" for MPT).',
        )


def request_too_long(prompt: int, gen: int, spec: ModelSpec) -> NoReturn:
    """No --context given: the prompt and the generated tokens are what is too long (the
    message said '--context 200512', a value the user never gave)."""
    most = spec.max_context
    hint = f"Keep --prompt + --gen within {most:,} tokens."
    if most - prompt >= 1:
        hint = f"Use --gen {most - prompt} or less, or a shorter --prompt."
    raise InputError(
        f"--prompt {prompt:,} + --gen {gen:,} = {prompt + gen:,} tokens is "
        f"longer than {spec.name}'s {most:,}-token context.",
        hint=hint,
    )


def kv_headroom(memory: MemoryBreakdown) -> float:
    """How many times the plan's KV cache would still fit on its tightest device (may be < 1)."""
    ratios = []
    for device in memory.per_device:
        kv = device.kv_cache_bytes
        if kv <= 0:
            continue
        free = device.capacity_bytes - (device.total_bytes - kv)
        ratios.append(free / kv)
    return min(ratios) if ratios else float("inf")


def largest_context(spec: ModelSpec, kv_dtype: str, context: int, headroom: float) -> int:
    """Largest context whose KV cache is at most ``headroom`` x that of ``context`` tokens."""
    if headroom <= 0:
        return 0
    budget = spec.kv_cache_bytes(context, kv_dtype) * headroom
    if spec.kv_cache_bytes(spec.max_context, kv_dtype) <= budget:
        return spec.max_context
    low, high = 0, spec.max_context  # kv(low) <= budget < kv(high)
    while high - low > 1:
        middle = (low + high) // 2
        if spec.kv_cache_bytes(middle, kv_dtype) <= budget:
            low = middle
        else:
            high = middle
    return low


def plan_max_context(plan: InferencePlan, spec: ModelSpec) -> int:
    """Largest context the plan's hardware, quant and KV dtype hold (0: not even the weights)."""
    context = int(plan.workload.context)
    return largest_context(spec, plan.kv_quant, context, kv_headroom(plan.memory))


@dataclass(frozen=True)
class ContextStep:
    """One next step for a longer context, with the context it reaches."""

    description: str
    change: Mapping[str, object]
    max_context: int


def next_kv_dtype(kv_dtype: str, engine: str) -> str | None:
    step = _KV_STEPS.get(kv_dtype.lower())
    if step == "q8_0" and engine not in _GGUF_ENGINES:
        return "fp8"
    if step in ("q8_0", "q4_0") and engine not in _GGUF_ENGINES:
        return None
    return step


def _one_more_device(on: str | None) -> str | None:
    """'rtx-4090' -> '2x rtx-4090'; '2x rtx-3090+nvlink' -> '3x rtx-3090+nvlink'."""
    if not on or "this-machine" in on:
        return None
    from rigwise.hardware.nodes import split_count

    head, plus, link = on.partition("+")
    count, device = split_count(head)
    return f"{count + 1}x {device}{plus}{link}"


def context_steps(
    options: OptionFields,
    plan: InferencePlan,
    spec: ModelSpec,
    replan: Replan,
) -> tuple[ContextStep, ...]:
    """What a smaller KV dtype and one more device each make of the largest context."""
    short = {**options, **_PROBE}
    changes: list[tuple[str, dict[str, object]]] = []
    kv = next_kv_dtype(plan.kv_quant, plan.engine)
    if kv:
        changes.append((f"--kv-quant {kv}", {"kv_quant": kv}))
    on = options.get("on")
    more = _one_more_device(on if isinstance(on, str) else None)
    if more and not options.get("cluster") and options.get("nodes", 1) == 1:
        changes.append((f"--on '{more}'", {"on": more}))
    steps = []
    for label, change in changes:
        try:
            other = replan({**short, "quant": plan.quant, "kv_quant": plan.kv_quant, **change})
        except (RigwiseError, ValueError):  # a step that cannot be planned is not offered
            continue
        reach = plan_max_context(other, spec)
        if reach < 2:
            continue
        steps.append(ContextStep(f"{label}: up to {reach:,} tokens", change, reach))
    return tuple(steps)


def _whole(value: object) -> int:
    """A count option given as a number or its text ('128')."""
    if isinstance(value, int | float | str):
        return int(value)
    raise TypeError(f"not a count: {value!r}")


def resolve_max(
    options: OptionFields, replan: Replan, spec: ModelSpec
) -> tuple[dict[str, object], int, tuple[ContextStep, ...]]:
    """Options with ``context``/``prompt`` = 'max' replaced by the largest that fits."""
    context = options.get("context")
    if options.get("prompt") == MAX and context not in (None, MAX):
        # the prompt fills the largest context that fits: a context given too was dropped
        raise InputError(
            f"--prompt max fills the largest context that fits; --context {context} cannot "
            "be combined with it.",
            hint="Drop --context, or give --prompt N to plan a prompt within that context.",
        )
    gen = _whole(options.get("gen", 128))
    plan = replan({**options, **_PROBE})
    reach = plan_max_context(plan, spec)
    resolved = {k: v for k, v in options.items() if v != MAX}
    steps = context_steps(options, plan, spec, replan) if reach < spec.max_context else ()
    if reach < 2:  # not even the weights fit: plan the defaults, which say why
        return resolved, reach, steps
    if options.get("prompt") == MAX:
        resolved["prompt"] = max(1, reach - gen)
        if options.get("context") != MAX:
            resolved.pop("context", None)
    if options.get("context") == MAX:
        resolved["context"] = reach
    return resolved, reach, steps


def plan_with_max(
    options: OptionFields,
    plan: Callable[..., InferencePlan],
    replan: Replan,
    spec: ModelSpec,
) -> InferencePlan:
    """``plan(**options)`` at the largest context (or prompt) that fits, saying so, with the
    next steps (a smaller KV dtype, one more device) as levers."""
    from rigwise.plans import Lever

    resolved, reach, steps = resolve_max(options, replan, spec)
    result = plan(**resolved)
    what = "prompt" if options.get("prompt") == MAX and options.get("context") != MAX else "context"
    note = (
        "not even the weights fit, at any context"
        if reach < 2
        else f"largest context that fits: {reach:,} tokens ({result.quant}, KV {result.kv_quant}"
        + (", the model's maximum" if reach >= spec.max_context else "")
        + ")"
        + (f"; --prompt max = {_whole(resolved['prompt']):,} tokens" if what == "prompt" else "")
    )
    levers = tuple(
        Lever(
            description=f"longer context: {step.description}",
            change=dict(step.change),
            verdict="fits",
            decode_tokens_per_s=None,
            decode_speedup=None,
            fixes_fit=False,
        )
        for step in steps
    )
    return replace(result, notes=(note, *result.notes), levers=(*levers, *result.levers))


__all__ = [
    "MAX",
    "ContextStep",
    "OptionFields",
    "Replan",
    "context_steps",
    "default_context_tokens",
    "kv_headroom",
    "largest_context",
    "plan_max_context",
    "plan_with_max",
    "request_too_long",
    "require_context_length",
    "resolve_max",
]


def more_devices_text(on: str, need_ratio: float, limit: int = 16) -> str | None:
    """``on`` with enough devices for ``need_ratio`` x one device's memory (None: not a count
    of one device, e.g. a system or this machine's CPU)."""
    if "this-machine" in on:
        return None
    import math

    from rigwise.hardware.nodes import find_system, split_count

    head, plus, link = on.partition("+")
    count, device = split_count(head)
    if find_system(device) is not None:
        return None
    wanted = max(count + 1, math.ceil(count * need_ratio * 1.05))
    if wanted > limit:
        return None
    return f"{wanted}x {device}{plus}{link}"
