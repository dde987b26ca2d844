"""Many training plans at once (``rigwise train --queries``): queries that share a model,
hardware, factors and workload have their layouts scored together as arrays, by the same
``evaluate`` the layout search runs (``rigwise.search``), not one array of one layout each.

Every answer is what ``plan_training`` gives for that query alone (tests/cli/
test_queries_batch.py holds the two equal): the same pruning rules and messages, the same
fall-back to a search when the default layout does not fit, the same notes.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from rigwise.api.train import (
    Notes,
    Search,
    _plan,
    _Setup,
    broken_layout_plan,
    continued,
    given_layout,
    plan_training,
    prepared,
)
from rigwise.estimate.training import Evaluation, evaluate
from rigwise.estimate.training_layout import Layout, LayoutArrays, Workload
from rigwise.plans import TrainingPlan
from rigwise.search import SearchResult, prune_rules, search_layouts

# One query of a group: its position in the batch, what it shares, its notes, its layout.
_Member = tuple[int, _Setup, Notes, Layout]


def plan_training_batch(queries: list[dict[str, Any]]) -> list[TrainingPlan | Exception]:
    """The plan of each query (its options, as ``plan_training`` takes them as keywords), or
    the exception that query raised, in order."""
    results: list[TrainingPlan | Exception | None] = [None] * len(queries)
    groups: dict[tuple[object, ...], list[_Member]] = {}
    for index, query in enumerate(queries):
        try:
            setup, notes = prepared(None, query)
            if setup.opts.seq == "max" or setup.opts.search:
                results[index] = plan_training(**query)  # searched: no single layout to batch
                continue
            work = setup.workload(setup.opts.seq)
            member = (index, setup, notes, given_layout(setup.opts, work, setup.gpus))
            groups.setdefault(_group_key(setup, work), []).append(member)
        except Exception as exc:  # answered per line by the caller, as plan_training's are
            results[index] = exc
    searches: dict[tuple[object, ...], SearchResult] = {}
    for key, members in groups.items():
        for index, plan in _group_plans(members, key[-1], _memo(searches, key)):  # type: ignore[arg-type]
            results[index] = plan
    return [r if r is not None else RuntimeError("query not planned") for r in results]


def _group_key(setup: _Setup, work: Workload) -> tuple[object, ...]:
    """Queries with equal keys share every input of ``evaluate`` but the layout. The model,
    geometry, factors and devices are the cached lookups' objects, compared by identity (the
    members hold them, so no id is reused meanwhile); calibrated factors are made per query,
    so such queries are never grouped."""
    fabric = setup.fabric
    devices = (id(fabric.accelerator), id(fabric.intra_link), id(fabric.network))
    shape = (fabric.gpus_per_node, fabric.network_ports, fabric.power_limit_watts, setup.gpus)
    return (id(setup.spec), id(setup.geo), id(setup.factors), *devices, *shape, work)


def _memo(searches: dict[tuple[object, ...], SearchResult], group: tuple[object, ...]) -> Search:
    """``search_layouts`` run once per group and fixed flags: members whose default layout
    does not fit and that leave the same flags free fall back to the same search (its
    ``search.seconds`` is that one search's time)."""

    def search(*args: Any) -> SearchResult:
        fixed, rest = args[5], args[6:]
        key = (*group, tuple(sorted(fixed.items())), *rest)
        found = searches.get(key)
        if found is None:
            found = searches[key] = search_layouts(*args)
        return found

    return search


def _group_plans(
    members: list[_Member], work: Workload, search: Search
) -> list[tuple[int, TrainingPlan | Exception]]:
    """Each member's plan: pruned by the layout rules, then the rest evaluated together; a
    group that fails as a whole is planned member by member (each gets its own error)."""
    try:
        return _evaluated_together(members, work, search)
    except Exception:
        return [(index, _alone(setup, notes, work)) for index, setup, notes, _ in members]


def _alone(setup: _Setup, notes: Notes, work: Workload) -> TrainingPlan | Exception:
    try:
        plan = _plan(setup, work)
    except Exception as exc:
        return exc
    return replace(plan, notes=notes + plan.notes)


def _evaluated_together(
    members: list[_Member], work: Workload, search: Search
) -> list[tuple[int, TrainingPlan | Exception]]:
    first = members[0][1]
    lay = LayoutArrays.from_layouts([layout for *_, layout in members])
    rules = prune_rules(first.geo, work, lay, first.gpus, first.fabric.gpus_per_node)
    out: list[tuple[int, TrainingPlan | Exception]] = []
    kept: list[int] = []
    for position, (index, setup, notes, layout) in enumerate(members):
        broken = [reason for reason, bad in rules if bad[position]]
        found = broken_layout_plan(setup, layout, broken)
        if found is None:
            kept.append(position)
        else:
            out.append((index, replace(found, notes=notes + found.notes)))
    if kept:
        ev = _once(
            evaluate(first.geo, work, lay.take(_positions(kept)), first.fabric, first.factors)
        )
        for row, position in enumerate(kept):
            index, setup, notes, _ = members[position]
            plan = setup.plan_at(ev, row, work)
            out.append((index, _continued(setup, notes, work, plan, search)))
    return out


def _computed_once(derived: Any) -> Any:
    """A property of ``Evaluation`` computed at its first use and then kept."""
    return functools.cached_property(derived.fget)


@dataclass(frozen=True)
class _Evaluated(Evaluation):
    """An ``Evaluation`` whose derived arrays are computed once, not once per plan taken
    from it (``plan_from`` reads a row of each: a group of N plans would compute them N
    times). The same expressions on the same arrays: the same values."""

    fits = _computed_once(Evaluation.fits)
    tokens_per_s = _computed_once(Evaluation.tokens_per_s)
    model_flops_per_gpu = _computed_once(Evaluation.model_flops_per_gpu)
    mfu = _computed_once(Evaluation.mfu)
    hfu = _computed_once(Evaluation.hfu)


def _once(ev: Evaluation) -> Evaluation:
    return _Evaluated(**{f.name: getattr(ev, f.name) for f in fields(ev)})


def _positions(kept: list[int]) -> np.ndarray:
    return np.asarray(kept, dtype=np.int64)


def _continued(
    setup: _Setup, notes: Notes, work: Workload, plan: TrainingPlan, search: Search
) -> TrainingPlan | Exception:
    try:
        found = continued(setup, work, plan, search)
    except Exception as exc:
        return exc
    return replace(found, notes=notes + found.notes)


__all__ = ["plan_training_batch"]
