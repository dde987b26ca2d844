"""Levers: what to change to make a plan fit or run faster, each measured by re-planning.

A lever is one change of the options (another quant, a quantized KV cache, one more device,
a shorter context, CPU offload, another engine). Each is evaluated by running the planner again
with that change; levers are ranked by effect: first those that turn "does not fit" into a fit,
then by decode speed-up. Nothing here estimates anything itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from rigwise.errors import RigwiseError

_GGUF_QUANTS = ("Q4_K_M", "Q8_0", "Q5_K_M", "Q3_K_M", "IQ2_XXS")
_SERVER_QUANTS = ("FP8", "AWQ-4bit-g128", "BF16")
_KV_QUANT = {"llama.cpp": "q8_0", "ollama": "q8_0"}
_NETWORK = {"unified": "thunderbolt-4", "cpu": "10gbe"}  # how such machines are usually joined
_COUNT = re.compile(r"^\s*(\d+)\s*x\s*(.+)$", re.I)
_MIN_GAIN = 1.05  # a lever must make decode or serving at least 5% faster to be listed
_MAX_LEVERS = 5
_CLOSER = 0.9  # a change that needs 10% less memory (per byte usable) is worth naming


class _Plan(Protocol):
    """What levers read from a plan (rigwise.api.infer.InferencePlan)."""

    @property
    def fits(self) -> bool: ...

    @property
    def verdict(self) -> str: ...

    @property
    def quant(self) -> str: ...

    @property
    def engine(self) -> str: ...

    @property
    def kv_quant(self) -> str: ...

    @property
    def reason(self) -> str: ...

    @property
    def memory(self) -> Any: ...

    @property
    def decode(self) -> Any: ...


@dataclass(frozen=True)
class Lever:
    description: str
    change: Mapping[str, Any]
    verdict: str
    decode_tokens_per_s: float | None
    decode_speedup: float | None
    fixes_fit: bool
    quality_loss: bool = False  # fewer bits per weight than the plan: ranked after lossless levers

    def to_dict(self) -> dict[str, Any]:
        return {
            "description": self.description,
            "change": dict(self.change),
            "verdict": self.verdict,
            "decode_tokens_per_s": self.decode_tokens_per_s,
            "decode_speedup": self.decode_speedup,
            "fixes_fit": self.fixes_fit,
            "quality_loss": self.quality_loss,
        }


def _candidates(options: Mapping[str, Any], plan: _Plan) -> Iterator[tuple[str, dict[str, Any]]]:
    quants = _GGUF_QUANTS if plan.engine in ("llama.cpp", "ollama", "mlx") else _SERVER_QUANTS
    for quant in quants:
        if quant.lower() != plan.quant.lower():
            yield f"{quant} instead of {plan.quant}", {"quant": quant}
    kv = _KV_QUANT.get(plan.engine, "fp8")
    if plan.kv_quant.lower() not in (kv, "q4_0"):
        yield f"--kv-quant {kv}", {"kv_quant": kv}
    yield from _more_hardware(options, plan)
    context = options.get("context") or options["prompt"] + options["gen"]
    if not plan.fits and context > 4096:
        yield f"--context {context // 2}", {"context": context // 2}
    if not plan.fits and options.get("offload") != "auto":
        yield "--offload auto (weights that do not fit go to host RAM)", {"offload": "auto"}


def _more_hardware(options: Mapping[str, Any], plan: _Plan) -> Iterator[tuple[str, dict[str, Any]]]:
    """One more device in the box, or, for machines that are one device (Macs, CPU boxes) or
    clusters, one more node on the network."""
    on = options.get("on")
    if not on or options.get("cluster"):
        return
    nodes = int(options.get("nodes") or 1)
    whole_machines = set(getattr(plan, "device_kinds", ())) & {"unified", "cpu"}
    if nodes > 1 or whole_machines:
        network = options.get("network") or _NETWORK.get(sorted(whole_machines)[0], "10gbe")
        label = "a second machine" if nodes == 1 else "one more node"
        yield f"{label} ({on}) over {network}", {"nodes": nodes + 1, "network": network}
        return
    match = _COUNT.match(str(on))
    count, device = (int(match.group(1)), match.group(2)) if match else (1, str(on))
    yield f"{'a second' if count == 1 else 'one more'} {device}", {"on": f"{count + 1}x {device}"}


def _rate(plan: _Plan) -> float | None:
    return plan.decode.tokens_per_s if plan.fits and plan.decode else None


def _describe(name: str, plan: _Plan, fixes: bool, speedup: float | None) -> str:
    effects = []
    if fixes:
        effects.append(plan.verdict.replace("tight", "fits (tight)"))
        if plan.decode is not None:
            effects.append(f"{plan.decode.tokens_per_s:.1f} tok/s decode")
    if speedup is not None:
        effects.append(f"{speedup:.1f}x {'faster' if speedup >= 1 else 'slower'} decode")
    return f"{name}: {', '.join(effects)}" if effects else name


def suggest_levers(
    options: Mapping[str, Any], plan: _Plan, run: Callable[[Mapping[str, Any]], _Plan]
) -> tuple[Lever, ...]:
    """Levers for ``plan`` (made from ``options``), ranked: fit fixes first, then speed-up."""
    levers = []
    base_rate = _rate(plan)
    for name, change in _candidates(options, plan):
        try:
            other = run({**options, **change})
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
        lossy = _smaller_weights(plan, other)
        if closer:
            description += f": still does not fit ({other.reason})"
        elif lossy:
            description += " (fewer bits per weight: some quality loss)"
        levers.append(Lever(description, change, other.verdict, rate, speedup, fixes, lossy))
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
    return tuple(levers[:_MAX_LEVERS])


def _need(plan: _Plan) -> float:
    return float(plan.memory.total_bytes) / max(float(plan.memory.capacity_bytes), 1.0)


def _closer(plan: _Plan, other: _Plan) -> bool:
    """Neither fits, but the change cuts the memory needed per byte available by 10%+."""
    return not plan.fits and not other.fits and _need(other) < _need(plan) * _CLOSER


def _smaller_weights(plan: _Plan, other: _Plan) -> bool:
    return float(other.memory.weights_bytes) < float(plan.memory.weights_bytes) * _CLOSER
