"""Levers: what to change to make a plan fit or run faster, each measured by re-planning.

A lever is one change of the options (another quant, a quantized KV cache, one more device,
a shorter context, CPU offload, another engine). Each is evaluated by running the planner again
on the options with that change (``dataclasses.replace``: typed fields, checked again);
levers are ranked by effect: first those that turn "does not fit" into a fit, then by decode
speed-up. Nothing here estimates anything itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from rigwise.errors import RigwiseError
from rigwise.estimate.plan_intervals import phase_range
from rigwise.hardware.nodes import split_count  # the one parser of "2x rtx-3090"
from rigwise.plans import InferencePlan, Lever

if TYPE_CHECKING:
    from rigwise.api.infer_options import InferOptions

_GGUF_QUANTS = ("Q4_K_M", "Q8_0", "Q5_K_M", "Q3_K_M", "IQ2_XXS")
_SERVER_QUANTS = ("FP8", "AWQ-4bit-g128", "BF16")
_KV_QUANT = {"llama.cpp": "q8_0", "ollama": "q8_0"}
_NETWORK = {"unified": "thunderbolt-4", "cpu": "10gbe"}  # how such machines are usually joined
_MIN_GAIN = 1.05  # a lever must make decode or serving at least 5% faster to be listed
_MAX_LEVERS = 5
_CLOSER = 0.9  # a change that needs 10% less memory (per byte usable) is worth naming

Change = dict[str, Any]


def _candidates(options: InferOptions, plan: InferencePlan) -> Iterator[tuple[str, Change]]:
    quants = _GGUF_QUANTS if plan.engine in ("llama.cpp", "ollama", "mlx") else _SERVER_QUANTS
    for quant in quants:
        if quant.lower() != plan.quant.lower():
            yield f"{quant} instead of {plan.quant}", {"quant": quant}
    kv = _KV_QUANT.get(plan.engine, "fp8")
    if plan.kv_quant.lower() not in (kv, "q4_0"):
        yield f"--kv-quant {kv}", {"kv_quant": kv}
    yield from _more_hardware(options, plan)
    context = options.context or options.prompt + options.gen
    if not plan.fits and context > 4096:
        yield f"--context {context // 2}", {"context": context // 2}
    if not plan.fits and options.offload != "auto":
        from rigwise.api.mixed import offload_candidate

        yield offload_candidate(options, plan)


def _more_hardware(options: InferOptions, plan: InferencePlan) -> Iterator[tuple[str, Change]]:
    """One more device in the box, or, for machines that are one device (Macs, CPU boxes) or
    clusters, one more node on the network."""
    on = options.on
    if not on or options.cluster:
        return
    nodes = options.nodes
    whole_machines = set(plan.device_kinds) & {"unified", "cpu"}
    if nodes > 1 or whole_machines:
        kind = min(whole_machines, default="")  # GPU nodes given without --network: 10gbe
        network = options.network or _NETWORK.get(kind, "10gbe")
        label = "a second machine" if nodes == 1 else "one more node"
        yield f"{label} ({on}) over {network}", {"nodes": nodes + 1, "network": network}
        return
    count, device = split_count(on)
    yield f"{'a second' if count == 1 else 'one more'} {device}", {"on": f"{count + 1}x {device}"}


def _changed(options: InferOptions, change: Change) -> InferOptions:
    """The options with ``change``, validated (one node past the bounds is bad input)."""
    from dataclasses import replace

    from rigwise.validate_input import validation_error

    try:
        return replace(options, **change)
    except Exception as exc:
        error = validation_error(exc, "Bad option", None)
        if error is None:
            raise
        raise error from None


def _rate(plan: InferencePlan) -> float | None:
    return plan.decode.tokens_per_s if plan.fits and plan.decode else None


def _describe(name: str, plan: InferencePlan, fixes: bool, speedup: float | None) -> str:
    effects = []
    if fixes:
        effects.append(plan.verdict.replace("tight", "fits (tight)"))
        if plan.decode is not None:
            effects.append(f"{plan.decode.tokens_per_s:.1f} tok/s decode")
    if speedup is not None:
        effects.append(f"{speedup:.1f}x {'faster' if speedup >= 1 else 'slower'} decode")
    return f"{name}: {', '.join(effects)}" if effects else name


def suggest_levers(
    options: InferOptions, plan: InferencePlan, run: Callable[[InferOptions], InferencePlan]
) -> tuple[Lever, ...]:
    """Levers for ``plan`` (made from ``options``), ranked: fit fixes first, then speed-up.
    ``run`` plans the changed options (the planner without levers)."""
    levers = []
    base_rate = _rate(plan)
    for name, change in _candidates(options, plan):
        try:
            other = run(_changed(options, change))
        except RigwiseError:
            continue  # e.g. one more device of a preset that cannot be multiplied
        if getattr(other, "broken_rule", ""):
            continue  # the engine refuses that layout (engine_rules.csv): never a lever
        rate = _rate(other)
        fixes = other.fits and not plan.fits
        speedup = rate / base_rate if rate and base_rate else None
        closer = _closer(plan, other)
        if not fixes and not closer and (speedup is None or speedup < _MIN_GAIN):
            continue
        description = _describe(name, other, fixes, speedup)
        lossy = _smaller_weights(plan, other) and other.quant != plan.quant  # not offload
        if closer:
            description += f": still does not fit ({other.reason})"
        elif lossy:
            description += " (fewer bits per weight: some quality loss)"
        levers.append(
            Lever(
                description, change, other.verdict, rate, speedup, fixes, lossy,
                phase_range(other, "decode"),
            )
        )  # fmt: skip
    # Fit fixes first; among equals, a lever that keeps the model's quality beats a faster one
    # that throws bits away (a user asking "how fast" rarely wants IQ2_XXS as the first answer).
    levers.sort(
        key=lambda lv: (
            not lv.fixes_fit,
            lv.verdict != "fits",
            lv.quality_loss,
            -(lv.decode_tokens_per_s or 0.0),
        )
    )
    from rigwise.api.mixed import without_last_card

    card = without_last_card(options, plan, run)  # a mixed rig: is its last card worth it?
    return (*((card,) if card else ()), *levers[:_MAX_LEVERS])


def _need(plan: InferencePlan) -> float:
    return float(plan.memory.total_bytes) / max(float(plan.memory.capacity_bytes), 1.0)


def _closer(plan: InferencePlan, other: InferencePlan) -> bool:
    """Neither fits, but the change cuts the memory needed per byte available by 10%+."""
    return not plan.fits and not other.fits and _need(other) < _need(plan) * _CLOSER


def _smaller_weights(plan: InferencePlan, other: InferencePlan) -> bool:
    return float(other.memory.weights_bytes) < float(plan.memory.weights_bytes) * _CLOSER
