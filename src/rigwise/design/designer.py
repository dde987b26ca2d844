"""The designer behind ``rigwise build``: generate candidate builds -> estimate each with the
planners -> rank by the user's objective (rank_options; the Pareto frontier of cost against speed

Candidates: one box with 1..8 GPUs of each catalog GPU, several such boxes over a network,
Apple unified-memory machines, and renting GPUs by the hour. Each is estimated by the planners
(through ``rigwise.design.planner``), then priced, powered, costed and checked
(``rigwise.design.options``). Every rejected candidate is counted by reason.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rigwise.design.candidates import Candidate, Rejections, evaluate_formats, generate
from rigwise.design.options import BuildOption, DesignRequest, build_option
from rigwise.design.planner import Planner, rigwise_planner
from rigwise.design.ranges import with_ranges
from rigwise.hardware import Accelerator

if TYPE_CHECKING:
    from rigwise.design.compare import Comparison

__all__ = [
    "RANKS",
    "BuildOption",
    "Design",
    "DesignRequest",
    "design",
    "pareto_frontier",
    "price_usd",
    "rank_options",
]


@dataclass(frozen=True)
class Design:
    request: DesignRequest
    options: tuple[BuildOption, ...]
    frontier: tuple[BuildOption, ...]
    rejected: dict[str, int]
    evaluated: int
    notes: tuple[str, ...] = field(default=())
    rejected_examples: dict[str, list[str]] = field(default_factory=dict)
    comparison: Comparison | None = None  # of the first bought build (buy/rent/API)

    def to_dict(self) -> dict[str, Any]:
        req = self.request
        return {
            "model": req.model,
            "task": req.task,
            "target_tps": req.target_tps,
            "budget_usd": req.budget_usd,
            "used": req.used,
            "rank": req.rank,
            "method": req.method,
            "tokens": req.tokens,
            "deadline_s": req.deadline_s,
            "options": [o.to_dict() for o in self.options],
            "rejected": dict(sorted(self.rejected.items(), key=lambda kv: -kv[1])),
            "rejected_examples": self.rejected_examples,
            "evaluated": self.evaluated,
            "notes": list(self.notes),
            "comparison": self.comparison.to_dict() if self.comparison else None,
            "comparison_text": list(self.comparison.lines()) if self.comparison else [],
        }


RANKS = ("target", "price", "speed", "tco")
_CHECK_PENALTY = {"ok": 0, "warnings": 1}  # anything else (fail) ranks after both


def price_usd(option: BuildOption) -> float:
    """What the option costs up front: the purchase, or for renting the rent over the period."""
    return option.tco_usd if option.kind == "rent" else option.purchase_usd


def _bucket(price: float, fraction: float) -> int:
    """Prices within ``fraction`` of each other share a bucket (log scale)."""
    return math.floor(math.log(max(price, 1.0)) / math.log1p(fraction))


def rank_options(options: Sequence[BuildOption], rank: str = "target") -> list[BuildOption]:
    """Options ranked by the user's objective.

    ``target`` (default; every option already meets the target): builds to buy first, rented
    GPUs after them (the alternative to buying, not a build); within each, clean checks first
    (warnings cost rank, failures more), then the cheapest (prices within
    rank_price_bucket_fraction count as equal), then the faster. ``price``: cheapest, then
    faster. ``speed``: fastest, then cheaper. ``tco``: lowest total cost of ownership, then
    faster.
    """
    if rank not in RANKS:
        from rigwise.errors import UnknownNameError, closest

        raise UnknownNameError("rank", rank, closest(rank, RANKS))
    if rank == "speed":
        return sorted(options, key=lambda o: (-o.speed, price_usd(o)))
    if rank == "tco":
        return sorted(options, key=lambda o: (o.tco_usd, -o.speed))
    if rank == "price":
        return sorted(options, key=lambda o: (price_usd(o), -o.speed))
    from rigwise.design.parts import rule

    fraction = rule("rank_price_bucket_fraction")
    return sorted(
        options,
        key=lambda o: (
            o.kind == "rent",
            _CHECK_PENALTY.get(str(o.checks.get("verdict")), 2),
            _bucket(price_usd(o), fraction),
            -o.speed,
            price_usd(o),
        ),
    )


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
        options.append(with_ranges(option, estimate))
    frontier = pareto_frontier(options)
    ranked = rank_options(options, request.rank)
    notes = _notes(request, ranked[: request.top])
    return Design(
        request,
        tuple(ranked[: request.top]),
        frontier,
        dict(rejected.counts),
        evaluated,
        notes,
        rejected.examples,
        _comparison(request, ranked),
    )


def _comparison(request: DesignRequest, ranked: Sequence[BuildOption]) -> Comparison | None:
    """Buy vs rent vs API for the first option that is bought (inference tasks)."""
    bought = next((o for o in ranked if o.kind not in ("rent",)), None)
    if bought is None or request.task not in ("infer", "serve"):
        return None
    from rigwise.design.compare import compare
    from rigwise.design.parts import rule

    hours = request.hours_per_day or rule("hours_per_day_default")
    return compare(bought, request.model, hours)


def _label(cand: Candidate) -> str:
    nodes = f" x{cand.nodes} nodes" if cand.nodes > 1 else ""
    return f"{cand.kind} {cand.on}{nodes}"


def _example(
    cand: Candidate, quant: str | None, decode: float | None, train_s: float | None
) -> str:
    if decode is not None:
        speed = f"{decode:.1f} tok/s"
    else:
        from rigwise.units import format_seconds

        speed = format_seconds(train_s) if train_s else "time unknown"
    return f"{_label(cand)} ({quant or 'default'}: {speed})"


def _notes(request: DesignRequest, options: Sequence[BuildOption]) -> tuple[str, ...]:
    notes = []
    if any(o.kind == "multi-node" for o in options):
        notes.append(
            "Several boxes add their memory up, not their speed: layers run one box after "
            "another, and every token crosses the network (see the multi-node options' speed)."
        )
    stale = _stale_lines(options)
    if stale:
        from rigwise.design.parts import rule

        age = request.max_price_age_days or rule("price_max_age_days")
        notes.append(
            f"Prices older than {age:g} days: {'; '.join(stale[:8])}"
            + (f" and {len(stale) - 8} more" if len(stale) > 8 else "")
            + ". Renew them with `rigwise prices import FILE.csv` (docs/build.md)."
        )
    if not options:
        notes.append("Nothing feasible: see 'rejected' for why each candidate was dropped.")
    return tuple(notes)


def _stale_lines(options: Sequence[BuildOption]) -> list[str]:
    """Each stale price of the shown options once: 'rtx-3090 $680 (2024-07-01)'."""
    seen: dict[str, str] = {}
    for option in options:
        for line in option.parts:
            if line.stale and line.name not in seen:
                price = f"${line.unit_price_usd:,.0f}" if line.unit_price_usd else "no price"
                seen[line.name] = f"{line.name} {price} ({line.price_date or 'undated'})"
    return list(seen.values())


def _catalog_accelerators() -> list[Accelerator]:
    """The catalog's accelerators with the user's imported used prices and rental rates."""
    from rigwise.design.prices import user_prices, with_user_prices
    from rigwise.hardware import accelerators

    prices = user_prices()
    return [with_user_prices(a, prices) for a in accelerators()]
