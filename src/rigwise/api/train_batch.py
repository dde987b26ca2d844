"""Many training plans at once (``rigwise train --queries``): queries that share a model,
hardware, factors and workload have their layouts scored together as arrays, by the same
``evaluate`` the layout search runs (``rigwise.search``), not one array of one layout each.

Every answer is what ``plan_training`` gives for that query alone (tests/cli/
test_queries_batch.py holds the two equal): the same pruning rules and messages, the same
fall-back to a search when the default layout does not fit, the same notes.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
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
    noted,
    planned,
    prepared,
)
from rigwise.estimate.training import evaluate
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
                results[index] = planned(setup, notes)  # searched: no single layout to batch
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
        return [(index, _noted(notes, partial(_plan, s, work))) for index, s, notes, _ in members]


def _noted(notes: Notes, make: Callable[[], TrainingPlan]) -> TrainingPlan | Exception:
    """The plan ``make`` gives with the query's ``notes`` in front, or what it raised (each
    query's error is its own answer)."""
    try:
        return noted(make(), *notes)
    except Exception as exc:
        return exc


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
            out.append((index, noted(found, *notes)))
    if kept:
        ev = evaluate(first.geo, work, lay.take(_positions(kept)), first.fabric, first.factors)
        for row, position in enumerate(kept):
            index, setup, notes, _ = members[position]
            plan = setup.plan_at(ev, row, work)
            out.append((index, _noted(notes, partial(continued, setup, work, plan, search))))
    return out


def _positions(kept: list[int]) -> np.ndarray:
    return np.asarray(kept, dtype=np.int64)


__all__ = ["plan_training_batch"]
