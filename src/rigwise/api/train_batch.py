"""Many training plans at once (``rigwise train --queries``): queries that share a model,
hardware, factors and workload (its sequence length and global batch aside) have their
layouts scored together as arrays, by the same ``evaluate`` the layout search runs
(``rigwise.search``), not one array of one layout each; so are the searches the queries whose
default layout does not fit fall back to (``train_searches``).

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
    _plan,
    _Setup,
    broken_layout_plan,
    continued,
    given_layout,
    needs_search,
    noted,
    planned,
    prepared,
    search_args,
)
from rigwise.api.train_searches import (
    evaluated_rows,
    fabric_key,
    memo,
    searched_together,
    sizeless,
)
from rigwise.estimate.training import evaluate
from rigwise.estimate.training_layout import Layout, LayoutArrays, Workload
from rigwise.plans import TrainingPlan
from rigwise.search import prune_rules

# One query of a group: its position in the batch, what it shares, its notes, its layout and
# its workload.
_Member = tuple[int, _Setup, Notes, Layout, Workload]
# A member's plan of its given layout, before any search and its notes.
_Default = tuple[_Member, TrainingPlan]


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
            member = (index, setup, notes, given_layout(setup.opts, work, setup.gpus), work)
            groups.setdefault(group_key(setup, sizeless(work)), []).append(member)
        except Exception as exc:  # answered per line by the caller, as plan_training's are
            results[index] = exc
    defaults: list[_Default] = []
    for members in groups.values():
        for index, plan in _group_plans(members, defaults):
            results[index] = plan
    searches = searched_together(
        [search_args(m[1], m[4]) for m, plan in defaults if needs_search(m[1], plan)]
    )
    search = memo(searches)
    for (index, setup, notes, _, work), plan in defaults:
        results[index] = _noted(notes, partial(continued, setup, work, plan, search))
    return [r if r is not None else RuntimeError("query not planned") for r in results]


def group_key(setup: _Setup, work: Workload) -> tuple[object, ...]:
    """Queries with equal keys share every input of ``evaluate`` but the layout (and, with a
    ``sizeless`` workload, the sizes). The model, geometry, factors and devices are the cached
    lookups' objects, compared by identity (the members hold them, so no id is reused
    meanwhile); calibrated factors are made per query, so such queries are never grouped."""
    fabric = fabric_key(setup.fabric)
    return (id(setup.spec), id(setup.geo), id(setup.factors), *fabric, setup.gpus, work)


def _group_plans(
    members: list[_Member], defaults: list[_Default]
) -> list[tuple[int, TrainingPlan | Exception]]:
    """The plans of members whose layout breaks a rule (the others' plans go to
    ``defaults``); a group that fails as a whole is planned member by member (each gets its
    own plan or error)."""
    try:
        return _evaluated_together(members, defaults)
    except Exception:
        return [(m[0], _noted(m[2], partial(_plan, m[1], m[4]))) for m in members]


def _noted(notes: Notes, make: Callable[[], TrainingPlan]) -> TrainingPlan | Exception:
    """The plan ``make`` gives with the query's ``notes`` in front, or what it raised (each
    query's error is its own answer)."""
    try:
        return noted(make(), *notes)
    except Exception as exc:
        return exc


def _evaluated_together(
    members: list[_Member], defaults: list[_Default]
) -> list[tuple[int, TrainingPlan | Exception]]:
    first = members[0][1]
    lay = LayoutArrays.from_layouts([m[3] for m in members])
    work = evaluated_rows([m[4] for m in members], [1] * len(members))
    rules = prune_rules(first.geo, work, lay, first.gpus, first.fabric.gpus_per_node)
    out: list[tuple[int, TrainingPlan | Exception]] = []
    kept: list[int] = []
    for position, (index, setup, notes, layout, _) in enumerate(members):
        broken = [reason for reason, bad in rules if bad[position]]
        found = broken_layout_plan(setup, layout, broken)
        if found is None:
            kept.append(position)
        else:
            out.append((index, noted(found, *notes)))
    if kept:
        rows = _positions(kept)
        kept_work = evaluated_rows([members[p][4] for p in kept], [1] * len(kept))
        ev = evaluate(first.geo, kept_work, lay.take(rows), first.fabric, first.factors)
        planned_rows = [
            (members[p], members[p][1].plan_at(ev, r, members[p][4])) for r, p in enumerate(kept)
        ]
        defaults.extend(planned_rows)
    return out


def _positions(kept: list[int]) -> np.ndarray:
    return np.asarray(kept, dtype=np.int64)


__all__ = ["plan_training_batch"]
