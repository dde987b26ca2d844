"""The designer behind ``rigwise build``: generate candidate builds -> estimate each with the
planners -> keep the Pareto frontier of cost against speed -> ranked options.

Candidates: one box with 1..8 GPUs of each catalog GPU, several such boxes over a network,
Apple unified-memory machines, and renting GPUs by the hour. Each is estimated by the planners
(through ``rigwise.design.planner``), then priced, powered, costed and checked
(``rigwise.design.options``). Every rejected candidate is counted by reason.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rigwise.design.candidates import Candidate, Rejections, evaluate_formats, generate
from rigwise.design.options import BuildOption, DesignRequest, build_option
from rigwise.design.planner import Planner, rigwise_planner
from rigwise.hardware import Accelerator

__all__ = ["BuildOption", "Design", "DesignRequest", "design", "pareto_frontier"]


@dataclass(frozen=True)
class Design:
    request: DesignRequest
    options: tuple[BuildOption, ...]
    frontier: tuple[BuildOption, ...]
    rejected: dict[str, int]
    evaluated: int
    notes: tuple[str, ...] = field(default=())
    rejected_examples: dict[str, list[str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        req = self.request
        return {
            "model": req.model,
            "task": req.task,
            "target_tps": req.target_tps,
            "budget_usd": req.budget_usd,
            "used": req.used,
            "options": [o.to_dict() for o in self.options],
            "rejected": dict(sorted(self.rejected.items(), key=lambda kv: -kv[1])),
            "rejected_examples": self.rejected_examples,
            "evaluated": self.evaluated,
            "notes": list(self.notes),
        }


def _spread(frontier: tuple[BuildOption, ...], top: int) -> tuple[BuildOption, ...]:
    """At most ``top`` frontier options evenly spaced from the cheapest to the fastest."""
    if len(frontier) <= top:
        return frontier
    if top <= 1:
        return frontier[:top]
    step = (len(frontier) - 1) / (top - 1)
    return tuple(frontier[round(i * step)] for i in range(top))


def pareto_frontier(options: Sequence[BuildOption]) -> tuple[BuildOption, ...]:
    """Options no other option beats on both cost (TCO) and speed; cheapest first."""
    ordered = sorted(options, key=lambda o: (o.tco_usd, -o.speed))
    frontier: list[BuildOption] = []
    best_speed = -math.inf
    for option in ordered:
        if option.speed > best_speed:
            frontier.append(option)
            best_speed = option.speed
    return tuple(frontier)


def design(
    request: DesignRequest,
    *,
    planner: Planner | None = None,
    accelerators: Iterable[Accelerator] | None = None,
) -> Design:
    """Ranked builds for ``request``; rejected candidates counted by reason.

    With the real planners the model is resolved once here: an unknown name is bad input (one
    clear error, not every candidate "infeasible"), and its weight sizes prune hopeless formats.
    An injected planner (tests, other estimators) brings its own notion of the model."""
    weights_of = None
    if planner is None:
        from rigwise.models import load_model

        weights_of = load_model(request.model).weights_bytes
    plan = planner or rigwise_planner()
    pool = list(accelerators) if accelerators is not None else _catalog_accelerators()
    rejected = Rejections()
    options: list[BuildOption] = []
    evaluated = 0
    for cand in generate(pool, request.used, request.budget_usd, rejected):
        evaluated += 1
        fmt, estimate = evaluate_formats(plan, request, cand, weights_of)
        if fmt is None or estimate is None or not estimate.fits:
            rejected.add("does not fit in memory", _label(cand))
            continue
        option, why = build_option(
            request, cand, fmt, estimate.decode_tokens_per_s, estimate.time_to_train_s
        )
        if option is None:
            rejected.add(
                why,
                _example(cand, fmt.quant, estimate.decode_tokens_per_s, estimate.time_to_train_s),
            )
            continue
        options.append(option)
    frontier = pareto_frontier(options)
    shown = _spread(frontier, request.top)
    on_frontier = {id(o) for o in shown}
    rest = sorted((o for o in options if id(o) not in on_frontier), key=lambda o: o.tco_usd)
    ranked = list(shown) + rest
    notes = _notes(request, ranked[: request.top])
    return Design(
        request,
        tuple(ranked[: request.top]),
        frontier,
        dict(rejected.counts),
        evaluated,
        notes,
        rejected.examples,
    )


def _label(cand: Candidate) -> str:
    nodes = f" x{cand.nodes} nodes" if cand.nodes > 1 else ""
    return f"{cand.kind} {cand.on}{nodes}"


def _example(
    cand: Candidate, quant: str | None, decode: float | None, train_s: float | None
) -> str:
    if decode is not None:
        speed = f"{decode:.1f} tok/s"
    else:
        speed = f"{(train_s or 0) / 86400:.1f} d" if train_s else "-"
    return f"{_label(cand)} ({quant or 'default'}: {speed})"


def _notes(request: DesignRequest, options: Sequence[BuildOption]) -> tuple[str, ...]:
    notes = []
    if any(o.kind == "multi-node" for o in options):
        notes.append(
            "Several boxes add their memory up, not their speed: layers run one box after "
            "another, and every token crosses the network (see the multi-node options' speed)."
        )
    if any(o.stale_prices for o in options):
        notes.append(
            "Some prices are older than the allowed age (stale: true): check before buying."
        )
    if not options:
        notes.append("Nothing feasible: see 'rejected' for why each candidate was dropped.")
    return tuple(notes)


def _catalog_accelerators() -> list[Accelerator]:
    from rigwise.hardware import accelerators

    result: list[Accelerator] = list(accelerators())
    return result
