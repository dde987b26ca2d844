"""Levers for rigs people mix and offload: "is the last card worth it?" and host-RAM offload.

``without_last_card``: on a mixed rig ('rtx-3090+rtx-4090+rtx-5090') the plan without its last
card, with both speeds and largest contexts, so the lever answers whether the card earns its
slot. ``offload_candidate``: the offload lever names a host (the user's ``--host``, else the
default desktop platform of workload_defaults.csv) so that it can be planned at all; for MoE
models (gpt-oss-120b, Qwen3-235B on one GPU) it is often the lever that makes them run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from rigwise.catalog.loader import read_csv
from rigwise.errors import RigwiseError
from rigwise.plans import InferencePlan, Lever

if TYPE_CHECKING:
    from rigwise.api.infer_options import InferOptions
    from rigwise.models import ModelSpec


def default_host() -> str:
    row = next(r for r in read_csv("workload_defaults.csv") if r["key"] == "offload_host_default")
    return row["value"]


def offload_candidate(options: InferOptions, plan: InferencePlan) -> tuple[str, dict[str, object]]:
    """The --offload auto lever, with a host platform when the options name none."""
    if options.host is not None:
        return "--offload auto (weights that do not fit go to host RAM)", {"offload": "auto"}
    host = default_host()
    what = "MoE expert and other " if _is_moe(options.model) else ""
    return (
        f"--offload auto --host {host} ({what}weights that do not fit go to its host RAM)",
        {"offload": "auto", "host": host},
    )


def _is_moe(model: str) -> bool:
    from rigwise.api._lookup import cached_model

    try:
        return cached_model(model).moe is not None
    except RigwiseError:
        return False


def _parts(on: str | None) -> list[str]:
    from rigwise.hardware.nodes import mixed_rig

    if not on or mixed_rig(on) is None:
        return []
    return [p.strip() for p in on.split("+")]


def without_last_card(
    options: InferOptions, plan: InferencePlan, run: Callable[[InferOptions], InferencePlan]
) -> Lever | None:
    """On a mixed rig: the plan without its last card, with the numbers either way."""
    parts = _parts(options.on)
    if len(parts) < 2 or options.nodes != 1:
        return None
    from rigwise.api.context import plan_max_context

    fewer = "+".join(parts[:-1])
    try:
        other = run(replace(options, on=fewer, levers=False))
    except RigwiseError:
        return None
    spec = _spec(options.model)
    rate = other.decode.tokens_per_s if other.fits and other.decode else None
    base = plan.decode.tokens_per_s if plan.fits and plan.decode else None
    speedup = rate / base if rate and base else None
    without = _state(other, spec, plan_max_context)
    with_it = _state(plan, spec, plan_max_context)
    text = f"without the {parts[-1]} ({fewer}): {without}; with it: {with_it}"
    from rigwise.estimate.plan_intervals import phase_range

    interval = phase_range(other, "decode")
    return Lever(text, {"on": fewer}, other.verdict, rate, speedup, False, False, interval)


def _spec(model: str) -> ModelSpec:
    from rigwise.api._lookup import cached_model

    return cached_model(model)


def _state(
    plan: InferencePlan, spec: ModelSpec, max_context: Callable[[InferencePlan, ModelSpec], int]
) -> str:
    if not plan.fits:
        return "does not fit"
    rate = f"{plan.decode.tokens_per_s:,.1f} tok/s decode" if plan.decode else "fits"
    return f"{rate}, up to {max_context(plan, spec):,} tokens of context"
