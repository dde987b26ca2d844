"""Training layout search: generate -> estimate (numpy arrays) -> choose.

Candidates are the cross product of TP, PP, CP, EP, virtual stages, micro-batch, ZeRO stage,
recompute and sequence parallelism (any flag the user fixed stays fixed), with DP filling the
GPUs. Invalid layouts are pruned with counted reasons (divisibility of heads, layers, experts,
sequence and batch; then memory), the rest are estimated together as arrays by
``rigwise.estimate.training.evaluate`` and ranked by the objective.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rigwise.estimate.compute import TrainingFactors
from rigwise.estimate.training import Evaluation, evaluate
from rigwise.estimate.training_layout import RECOMPUTE, Geometry, LayoutArrays, Workload
from rigwise.estimate.training_step import Fabric
from rigwise.plans import SearchStats

OBJECTIVES = ("time", "cost", "energy")
_FIELDS = ("tp", "pp", "cp", "ep", "vpp", "micro_batch", "zero", "recompute", "sequence_parallel")


@dataclass(frozen=True)
class SearchResult:
    """The evaluated survivors (best first) and what was pruned, by reason."""

    evaluation: Evaluation | None
    order: np.ndarray  # indices into evaluation arrays, best first (fitting layouts only)
    generated: int
    evaluated: int
    pruned: Mapping[str, int]
    seconds: float
    objective: str
    notes: tuple[str, ...] = field(default=())

    @property
    def feasible(self) -> int:
        return int(self.order.shape[0])

    def stats(self) -> SearchStats:
        """What the search did, as a plan reports it (``TrainingPlan.search``)."""
        return SearchStats(
            objective=self.objective,
            generated=self.generated,
            evaluated=self.evaluated,
            feasible=self.feasible,
            pruned=dict(self.pruned),
            seconds=self.seconds,
            layouts_per_s=self.generated / self.seconds if self.seconds > 0 else None,
        )


def _powers_and_divisors(n: int, limit: int) -> list[int]:
    return [d for d in range(1, min(n, limit) + 1) if n % d == 0]


def candidate_values(
    geo: Geometry, work: Workload, gpus: int, gpus_per_node: int, fixed: Mapping[str, Any]
) -> dict[str, list[int]]:
    """The values each layout dimension may take (one value where the user fixed it)."""
    values = {
        "tp": _powers_and_divisors(gpus, max(gpus_per_node, 1) * 2),
        "pp": _powers_and_divisors(gpus, geo.layers),
        "cp": [c for c in _powers_and_divisors(gpus, 32) if c == 1 or work.seq_len >= 8192],
        "ep": _powers_and_divisors(gpus, geo.experts) if geo.moe_layers else [1],
        "vpp": [1, 2, 3, 4, 6, 8],
        "micro_batch": [b for b in (1, 2, 4, 8, 16) if b <= work.global_batch],
        "zero": [0, 1, 2, 3] if work.trains_base else [0, 3],
        "recompute": [0, 1, 2],
        "sequence_parallel": [0, 1],
    }
    for name, value in fixed.items():
        if value is None or name not in values:
            continue
        if name == "recompute":
            value = RECOMPUTE.index(value) if isinstance(value, str) else value
        values[name] = [int(value)]
    return values


def generate(
    values: Mapping[str, list[int]], gpus: int, fixed_dp: int | None, shrink: bool = False
) -> LayoutArrays:
    """The cross product; DP fills the GPUs, or with ``shrink`` also 1/2, 1/4, ... of them
    (a cost or energy search may finish cheaper on fewer GPUs)."""
    shares = [2**k for k in range(int(np.log2(gpus)) + 1)] if shrink and not fixed_dp else [1]
    axes = [np.asarray(values[name], dtype=np.int64) for name in _FIELDS]
    grids = np.meshgrid(*axes, np.asarray(shares, dtype=np.int64), indexing="ij")
    cols = {name: grid.ravel() for name, grid in zip(_FIELDS, grids[:-1], strict=True)}
    model_parallel = cols["tp"] * cols["pp"] * cols["cp"]
    if fixed_dp:
        dp = np.full_like(model_parallel, fixed_dp)
    else:
        full = gpus // model_parallel
        dp = np.where(full % grids[-1].ravel() == 0, full // grids[-1].ravel(), 0)
    return LayoutArrays(dp=dp, **cols)


_GENERATED: dict[tuple[object, ...], LayoutArrays] = {}  # generate's answers, kept (< 256)
# Layouts kept in all (~80 MB): one search of 256 GPUs generates 10.5 million (0.9 GB), which a
# process (the web UI, a library sweep) held for its life once kept; such sets are not kept.
_KEEP_ROWS = 2**20


def _generated(
    values: Mapping[str, list[int]], gpus: int, fixed_dp: int | None, shrink: bool
) -> LayoutArrays:
    """``generate``, once per arguments: a sweep's searches share a few sets of values."""
    key = (*[(name, tuple(v)) for name, v in values.items()], gpus, fixed_dp, shrink)
    found = _GENERATED.get(key)
    if found is None:
        found = generate(values, gpus, fixed_dp, shrink)
        if len(found) <= _KEEP_ROWS:
            kept = sum(len(lay) for lay in _GENERATED.values())
            if len(_GENERATED) >= 256 or kept + len(found) > _KEEP_ROWS:
                _GENERATED.clear()
            _GENERATED[key] = found
    return found


def prune_rules(
    geo: Geometry, work: Workload, lay: LayoutArrays, gpus: int, gpus_per_node: int
) -> list[tuple[str, np.ndarray]]:
    """(reason, rejected mask) in the order they are counted."""
    tp, pp, cp, dp = lay.tp, lay.pp, lay.cp, lay.dp
    layers_per_stage = np.ceil(geo.layers / pp)
    return [
        (
            "GPUs not divisible by tp x pp x cp",
            (dp < 1) | (gpus % np.maximum(tp * pp * cp * dp, 1) != 0),
        ),
        (
            "tp does not divide attention or KV heads",
            (geo.heads % tp != 0) | (geo.kv_heads % tp != 0),
        ),
        ("tp spans more than one node", tp > max(gpus_per_node, 1)),
        (
            "sequence parallel needs tp > 1 (and is free with it)",
            (lay.sequence_parallel == 1) != (tp > 1),
        ),
        ("pp exceeds the layers", pp > geo.layers),
        (
            "virtual stages need pp > 1 and divide the layers per stage",
            (lay.vpp > 1) & ((pp == 1) | (layers_per_stage % lay.vpp != 0)),
        ),
        ("cp does not divide the sequence in 2cp chunks", work.seq_len % (2 * cp) != 0),
        ("ep does not divide the experts or dp", (geo.experts % lay.ep != 0) | (dp % lay.ep != 0)),
        (
            "global batch not divisible by dp x micro-batch",
            work.global_batch % np.maximum(dp * lay.micro_batch, 1) != 0,
        ),
        ("ZeRO needs data parallelism", (lay.zero > 0) & (dp * cp == 1)),
    ]


def search_layouts(
    geo: Geometry,
    work: Workload,
    fabric: Fabric,
    factors: TrainingFactors,
    gpus: int,
    fixed: Mapping[str, Any],
    objective: str = "time",
    allow_fewer_gpus: bool = False,
) -> SearchResult:
    """Every candidate layout for ``gpus`` GPUs, pruned, estimated and ranked. A cost or
    energy search also tries 1/2, 1/4, ... of the GPUs only with ``allow_fewer_gpus``."""
    started = time.perf_counter()
    lay = generated(geo, work, gpus, fabric.gpus_per_node, fixed, objective, allow_fewer_gpus)
    found = (
        pruned_apart(geo, work, [lay], gpus, fabric.gpus_per_node)[1][0]
        if len(lay)
        else Candidates(lay, 0, {})
    )
    if len(found.survivors) == 0:
        return ranked(found, None, 0, fabric, factors, objective, started)
    ev = evaluate(geo, work, found.survivors, fabric, factors)
    return ranked(found, ev, 0, fabric, factors, objective, started)


@dataclass(frozen=True)
class Candidates:
    """The layouts a search generated, those its rules kept, and how many each rule pruned."""

    survivors: LayoutArrays
    generated: int
    pruned: dict[str, int]


def generated(
    geo: Geometry,
    work: Workload,
    gpus: int,
    gpus_per_node: int,
    fixed: Mapping[str, Any],
    objective: str = "time",
    allow_fewer_gpus: bool = False,
) -> LayoutArrays:
    """The cross product of a search's free flags, before its rules."""
    values = candidate_values(geo, work, gpus, gpus_per_node, fixed)
    return _generated(values, gpus, fixed.get("dp"), objective != "time" and allow_fewer_gpus)


def pruned_apart(
    geo: Geometry, work: Workload, lays: Sequence[LayoutArrays], gpus: int, gpus_per_node: int
) -> tuple[LayoutArrays, list[Candidates]]:
    """The candidates of searches whose generated layouts are ``lays`` (none empty; ``work``:
    each row's, ``per_row``), the rules applied to all their rows at once: the survivors of
    all, in order, and each search's ``Candidates`` (its survivors a slice of them)."""
    if not all(len(one) for one in lays):  # np.add.reduceat cannot count an empty one
        raise ValueError("a search generated no layout")
    lay = lays[0] if len(lays) == 1 else LayoutArrays.concat(lays)
    starts = np.cumsum([0, *[len(one) for one in lays[:-1]]])
    keep = np.ones(len(lay), dtype=bool)
    counted: list[tuple[str, np.ndarray]] = []
    for reason, rejected in prune_rules(geo, work, lay, gpus, gpus_per_node):
        counted.append((reason, np.add.reduceat((keep & rejected).astype(np.int64), starts)))
        keep &= ~rejected
    kept = np.add.reduceat(keep.astype(np.int64), starts)
    survivors, found, at = lay.take(np.flatnonzero(keep)), [], 0
    for i, one in enumerate(lays):
        pruned = {reason: int(counts[i]) for reason, counts in counted if counts[i]}
        found.append(Candidates(survivors.rows(at, at + int(kept[i])), len(one), pruned))
        at += int(kept[i])
    return survivors, found


def ranked(
    found: Candidates,
    ev: Evaluation | None,
    start: int,
    fabric: Fabric,
    factors: TrainingFactors,
    objective: str,
    started: float,
) -> SearchResult:
    """The search result of ``found``, whose survivors are the rows from ``start`` on of
    ``ev`` (None: there are none); ``started``: when the search began (perf_counter)."""
    if ev is None:
        empty = np.zeros(0, dtype=np.int64)
        seconds = time.perf_counter() - started
        return SearchResult(None, empty, found.generated, 0, found.pruned, seconds, objective)
    rows = slice(start, start + len(found.survivors))
    fits = ev.fits[rows]
    pruned = dict(found.pruned)
    if (~fits).any():
        pruned["does not fit in memory"] = int((~fits).sum())
    score = _score(ev, fabric, factors, objective, rows)
    order = start + np.flatnonzero(fits)[np.argsort(score[fits], kind="stable")]
    evaluated = len(found.survivors)
    seconds = time.perf_counter() - started
    return SearchResult(ev, order, found.generated, evaluated, pruned, seconds, objective)


def _score(
    ev: Evaluation,
    fabric: Fabric,
    factors: TrainingFactors,
    objective: str,
    rows: slice = slice(None),
) -> np.ndarray:
    """Lower is better: step time (time), or GPU-seconds per step (cost and energy: price and
    board power are per GPU, so both follow GPU-seconds; energy breaks ties toward less
    recompute). Ties go to the layout with more memory headroom. Only the ``rows`` of ``ev``
    one search ranks are scored (a batch's searches share one evaluation)."""
    seconds = ev.step.seconds[rows]
    headroom = 1.0 + 1e-9 * ev.memory.total[rows] / ev.capacity_bytes
    if objective == "time":
        by_time: np.ndarray = seconds * headroom
        return by_time
    gpu_seconds = seconds * ev.gpus_used[rows]
    if objective == "energy":
        by_energy: np.ndarray = gpu_seconds * (1.0 + 1e-6 * ev.hfu[rows]) * headroom
        return by_energy
    by_cost: np.ndarray = gpu_seconds * headroom
    return by_cost


SEQ_STEP = 256  # sequence lengths are searched in multiples of this


def longest_fitting(
    attempt: Callable[[int], Any], limit: int, step: int = SEQ_STEP
) -> tuple[int, Any]:
    """(length, result) of the longest multiple of ``step`` up to ``limit`` whose
    ``attempt(length).fits``, by bisection: memory grows with the length, so the lengths that
    fit form a prefix. When even ``step`` does not fit, that result comes back with length 0."""
    top = max(limit // step, 1)
    best = attempt(step)
    if not best.fits:
        return 0, best
    low, high = 1, top + 1  # low fits; high does not, or is past the limit
    while high - low > 1:
        mid = (low + high) // 2
        result = attempt(mid * step)
        if result.fits:
            low, best = mid, result
        else:
            high = mid
    return low * step, best


def explain_difference(
    parts_a: Mapping[str, float], parts_b: Mapping[str, float], top: int = 3
) -> list[str]:
    """The step-time parts that differ most between two plans (a minus b), largest first."""
    deltas = sorted(
        ((parts_a[k] - parts_b.get(k, 0.0), k) for k in parts_a), key=lambda x: -abs(x[0])
    )
    return [f"{name}: {delta:+.3g} s" for delta, name in deltas[:top] if abs(delta) > 0]
