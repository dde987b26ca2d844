"""``fit_models(...) -> FitReport``: what runs on this hardware, every catalog model ranked.

For each catalog model (``model_uses.csv`` gives its uses and released format), the quants the
engine runs are tried from the most bits down, the released ("native") format first; the first
that fits (and reaches ``min_tps``) is the model's best quant. Its largest context comes from the
same plan in closed form (``rigwise.api.context``), so a model costs one plan per quant tried
plus at most two for its lever. Ranking: models that run (fit and reach ``min_tps``) first,
bigger models first (more parameters is what a user buys memory for), then faster; then those
that fit but are too slow, fastest first; then those that do not fit, closest first.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from rigwise.api.context import default_context_tokens, plan_max_context
from rigwise.api.fit_types import NO_FIT, RUNS, SLOW, FitOptions, FitReport, ModelFit
from rigwise.catalog.loader import read_csv
from rigwise.errors import InputError, RigwiseError, UnknownNameError, closest
from rigwise.models import ModelSpec, catalog_models
from rigwise.validate_input import validated

if TYPE_CHECKING:
    from rigwise.plans import InferencePlan

USES = ("chat", "code", "reasoning", "vision", "embedding", "text", "benchmark")
_GGUF = ("Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "Q3_K_M", "Q2_K", "IQ2_XXS")
_QUANTS: dict[str, tuple[str, ...]] = {
    "llama.cpp": _GGUF,
    "ollama": _GGUF,
    "mlx": ("Q8_0", "Q4_0"),
    "transformers": ("INT8", "NF4"),
}
_SERVER = ("FP8", "AWQ-4bit-g128")  # vLLM, SGLang, TensorRT-LLM
_GGUF_NATIVE = ("BF16", "F16", "F32", "MXFP4_MOE")  # released formats llama.cpp converts losslessly


@dataclass(frozen=True)
class _Use:
    uses: tuple[str, ...]
    native_quant: str


def model_uses() -> dict[str, _Use]:
    """model_uses.csv by model name."""
    return {
        row["model"]: _Use(
            tuple(u for u in row["uses"].split(";") if u), row["native_quant"] or "BF16"
        )
        for row in read_csv("model_uses.csv")
    }


def quant_ladder(engine: str, native: str) -> tuple[str, ...]:
    """Quants to try for ``engine``, most bits first, the released format first of all."""
    if engine in ("llama.cpp", "ollama", "mlx"):
        first = (native,) if native in _GGUF_NATIVE else ()
        return (*first, *_QUANTS[engine])
    rest = _QUANTS.get(engine, _SERVER)
    return (native, *(q for q in rest if q != native))


def _check_use(use: object) -> None:
    if isinstance(use, str) and use not in USES:  # a misspelt use: the closest names
        raise UnknownNameError("use", use, closest(use, USES))


def _engine(on: str, engine: str | None) -> str:
    from rigwise.api._lookup import cached_cluster
    from rigwise.api.infer import InferOptions, default_engine

    if engine is not None:
        options = {"model": "x", "engine": engine}
        engine = validated(InferOptions, options, "Bad option", "See `rigwise fit --help`.").engine
    return engine or default_engine(cached_cluster(on, 1, None, None, "rtx-3090"), 1)


class PlanFields(TypedDict, total=False):
    """The ``plan_inference`` fields one model's plans are made with."""

    on: str
    engine: str
    context: int
    levers: bool
    model: str
    quant: str
    kv_quant: str


Planner = Callable[..., "InferencePlan"]


@dataclass(frozen=True)
class _Tried:
    """The plans of one model down its quant ladder."""

    chosen: InferencePlan | None  # fits and reaches min_tps
    fitting: tuple[InferencePlan, ...]  # every plan that fits
    last: InferencePlan | None  # the plan at the fewest bits (for the reason when nothing fits)


def _try_ladder(
    plan: Planner, base: PlanFields, ladder: tuple[str, ...], min_tps: float | None
) -> _Tried:
    fitting: list[InferencePlan] = []
    last = None
    for quant in ladder:
        try:
            result = plan(**base, quant=quant)
        except InputError:
            continue  # this engine cannot run this quant for this model
        last = result
        if not result.fits:
            continue
        fitting.append(result)
        speed = result.decode.tokens_per_s if result.decode else 0.0
        if min_tps is None or speed >= min_tps:
            return _Tried(result, tuple(fitting), last)
    return _Tried(None, tuple(fitting), last)


def _default_quant(base: PlanFields) -> str:
    from rigwise.api.infer_stages import DEFAULT_QUANT

    return DEFAULT_QUANT.get(str(base["engine"]), "FP8")


def _more_devices(plan: Planner, base: PlanFields, last: InferencePlan) -> str:
    """How many of the device it takes (at ``base``'s quant, else the plan's), checked by
    one plan."""
    from rigwise.api.context import more_devices_text

    quant = str(base.get("quant") or last.quant)
    bits = _bits(quant) / _bits(last.quant)
    need = bits * max(d.total_bytes / d.capacity_bytes for d in last.memory.per_device)
    text = more_devices_text(str(base["on"]), need)
    if text is None:
        total, usable = last.memory.total_bytes * bits, last.memory.capacity_bytes
        return f"needs {total / 1e9:,.1f} GB at {quant}; {usable / 1e9:,.1f} GB usable"
    try:
        other = plan(**{**base, "on": text, "quant": quant})
    except RigwiseError:
        return f"needs {need:.1f}x this device's memory at {quant}"
    if not other.fits:
        return f"needs more than {text} at {quant}"
    speed = other.decode.tokens_per_s if other.decode else 0.0
    return f"{text}: runs at {quant}, {speed:,.1f} tok/s decode"


def _context_lever(plan: Planner, base: PlanFields, chosen: InferencePlan, spec: ModelSpec) -> str:
    from rigwise.api.context import next_kv_dtype

    kv = next_kv_dtype(chosen.kv_quant, chosen.engine)
    if kv is None:
        return ""
    try:
        other = plan(**{**base, "quant": chosen.quant, "kv_quant": kv})
    except RigwiseError:
        return ""
    return f"--kv-quant {kv}: context up to {plan_max_context(other, spec):,} tokens"


def _range(plan: InferencePlan, phase: str) -> tuple[float, float] | None:
    """The plan's P10-P90 ``phase`` tokens/s, as its JSON has it (estimate/plan_intervals.py)."""
    from rigwise.estimate.plan_intervals import phase_range

    bounds = phase_range(plan, phase)
    return (float(bounds[0]), float(bounds[1])) if bounds is not None else None


def _row(spec: ModelSpec, use: _Use, status: str, result: InferencePlan, lever: str) -> ModelFit:
    decode = result.decode.tokens_per_s if result.decode else None
    prefill = result.prefill.tokens_per_s if result.prefill else None
    fits = status != NO_FIT
    ranged = result.decode is not None and result.prefill is not None
    return ModelFit(
        model=spec.name,
        uses=use.uses,
        params_total=spec.params_total,
        params_active=spec.params_active,
        status=status,
        quant=result.quant,
        native=result.quant == use.native_quant,
        kv_quant=result.kv_quant,
        max_context=plan_max_context(result, spec) if fits else 0,
        decode_tokens_per_s=decode,
        prefill_tokens_per_s=prefill,
        memory_bytes=result.memory.total_bytes,
        capacity_bytes=result.memory.capacity_bytes,
        lever=lever,
        reason=result.reason,
        decode_tokens_per_s_interval=_range(result, "decode") if ranged else None,
        prefill_tokens_per_s_interval=_range(result, "prefill") if ranged else None,
    )


def fit_model(
    plan: Planner, spec: ModelSpec, use: _Use, base: PlanFields, min_tps: float | None
) -> ModelFit | None:
    """One model's best quant that fits, its largest context, speeds and one lever."""
    base = {**base, "model": spec.name, "context": min(int(base["context"]), spec.max_context)}
    tried = _try_ladder(plan, base, quant_ladder(str(base["engine"]), use.native_quant), min_tps)
    if tried.chosen is not None:
        lever = ""
        if _bits(tried.chosen.quant) < _quality_bits():
            lever = _more_devices(plan, {**base, "quant": _default_quant(base)}, tried.chosen)
        elif plan_max_context(tried.chosen, spec) < spec.max_context:
            lever = _context_lever(plan, base, tried.chosen, spec)
        return _row(spec, use, RUNS, tried.chosen, lever)
    if tried.fitting:
        fastest = max(tried.fitting, key=lambda p: p.decode.tokens_per_s if p.decode else 0.0)
        lever = f"no quant reaches {min_tps:,.1f} tok/s on this hardware; a faster device does"
        return _row(spec, use, SLOW, fastest, lever)
    if tried.last is None:
        return None  # the engine runs none of the quants for this model
    if tried.last.broken_rule:  # an engine rule, not memory: more devices is no answer
        return _row(spec, use, NO_FIT, tried.last, tried.last.reason)
    return _row(spec, use, NO_FIT, tried.last, _more_devices(plan, base, tried.last))


def _quality_bits() -> float:
    row = next(
        r for r in read_csv("workload_defaults.csv") if r["key"] == "quality_bits_per_weight"
    )
    return float(row["value"])


def _bits(quant: str) -> float:
    from rigwise.models import quant_format

    return quant_format(quant).bits_per_weight


def _rank_key(fit: ModelFit) -> tuple[int, float, float]:
    speed = fit.decode_tokens_per_s or 0.0
    if fit.status == RUNS:
        tier = 0 if _bits(fit.quant) >= _quality_bits() else 1
        return (tier, -float(fit.params_total), -speed)
    if fit.status == SLOW:
        return (2, -speed, 0.0)
    return (3, fit.memory_bytes / max(fit.capacity_bytes, 1.0), 0.0)


def fit_models(
    *,
    on: str | None = None,
    use: str | None = None,
    min_tps: float | None = None,
    context: int | None = None,
    engine: str | None = None,
    benchmarks: bool = False,
) -> FitReport:
    """Every catalog model on ``on`` (None: this machine, probed), ranked (see the module doc).

    ``use`` keeps models tagged with it (chat, code, reasoning, vision, embedding, text,
    benchmark); ``min_tps``: decode tokens/s a model must reach to count as running; ``context``
    (default: the sourced default, capped at each model's maximum); ``benchmarks``: include the
    training-benchmark configurations that have no released weights.
    """
    from rigwise.api.infer import plan_inference

    started = time.perf_counter()
    _check_use(use)
    given = dict(on=on, use=use, min_tps=min_tps, context=context, engine=engine)
    opts = validated(  # on=5 or min_tps='x' raised AttributeError/TypeError; min_tps=nan ran none
        FitOptions,
        {**{k: v for k, v in given.items() if v is not None}, "benchmarks": benchmarks},
        "Bad option",
        "See `rigwise fit --help`.",
    )
    on, use, min_tps, context, engine = opts.on, opts.use, opts.min_tps, opts.context, opts.engine
    hardware = on or "this-machine"
    chosen_engine = _engine(hardware, engine)
    context = context or default_context_tokens()
    base: PlanFields = {
        "on": hardware,
        "engine": chosen_engine,
        "context": context,
        "levers": False,
    }
    fits = _fit_all(plan_inference, base, use, benchmarks, min_tps)
    return FitReport(
        hardware=_describe(hardware),
        engine=chosen_engine,
        context=context,
        use=use,
        min_tps=min_tps,
        models=tuple(sorted(fits, key=_rank_key)),
        notes=_notes(hardware, use, fits),
        seconds=time.perf_counter() - started,
    )


def _fit_all(
    plan: Planner, base: PlanFields, use: str | None, benchmarks: bool, min_tps: float | None
) -> list[ModelFit]:
    """The row of every catalog model ``use`` and ``benchmarks`` keep."""
    uses = model_uses()
    fits: list[ModelFit] = []
    tried: list[str] = []
    for spec in catalog_models():
        tagged = uses.get(spec.name, _Use(("text",), "BF16"))
        if (use is None and "benchmark" in tagged.uses and not benchmarks) or (
            use is not None and use not in tagged.uses
        ):
            continue
        tried.append(spec.name)
        row = fit_model(plan, spec, tagged, base, min_tps)
        if row is not None:
            fits.append(row)
    if tried and not fits:
        # Every quant of every model was refused as bad input ('0 of 0 models run'): an engine
        # that does not run on this hardware, a context shorter than the prompt. The plan of
        # the first model says why, as `rigwise infer` does.
        plan(**base, model=tried[0])
    return fits


def _describe(hardware: str) -> str:
    if hardware != "this-machine":
        return hardware
    from rigwise.api.machine import this_machine

    return this_machine().description


def _notes(hardware: str, use: str | None, fits: list[ModelFit]) -> tuple[str, ...]:
    notes: list[str] = []
    if hardware == "this-machine":
        from rigwise.api.machine import this_machine

        notes.extend(f"assumed: {a}" for a in this_machine().assumptions)
    if use is not None and not fits:
        notes.append(f"No catalog model is tagged '{use}' (catalog/data/model_uses.csv).")
    return tuple(notes)


__all__ = [
    "FitOptions",
    "FitReport",
    "ModelFit",
    "fit_model",
    "fit_models",
    "model_uses",
    "quant_ladder",
]
