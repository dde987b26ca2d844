"""Serving layout search: generate -> estimate (numpy arrays) -> choose.

Candidates: aggregated layouts (tp x pp, with ep and attention_dp inside tp for MoE models, dp
replicas filling the GPUs, a running batch per replica) and disaggregated ones (a prefill
layout x a decode layout x how many workers of each). Per layout shape the batch-independent
parts (engine rules, memory, one prompt's prefill) are computed once; the decode step is
evaluated for every running batch at once as an array by the same physics as the planner
(``inference_batched.decode_step_seconds``), and disaggregated worker splits are broadcast
over those arrays. Layouts that break an engine rule or do not fit are counted by reason.
Survivors are filtered by the SLOs (TTFT, TPOT) and ranked by tokens/s per GPU; the Pareto
frontier of tokens/s per GPU against tokens/s per user is what a deployment chooses from (as in
NVIDIA Dynamo's aiconfigurator, whose code this does not use).
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rigwise.estimate.inference import (
    Context,
    prefill_phase,
)
from rigwise.estimate.inference_batched import (
    decode_step_seconds,
    prefill_seconds_per_token_batched,
)
from rigwise.estimate.inference_memory import MemoryBreakdown
from rigwise.estimate.inference_stages import Stage
from rigwise.estimate.serving import (
    closed_loop_ttft_seconds,
    engine_max_batch,
    max_concurrency,
    resident_kv_tokens,
    step_token_budget,
    wave_ttft_seconds,
)
from rigwise.estimate.serving_disagg import kv_transfer_seconds
from rigwise.estimate.serving_frontend import frontend_cycle_seconds
from rigwise.estimate.serving_layout import ReplicaLayout, check_rules
from rigwise.estimate.serving_tpot import wave_tpot_seconds
from rigwise.hardware import Cluster, Link
from rigwise.plans import DOES_NOT_FIT

_MAX_PP = 8  # deeper pipelines are not searched (serving rarely gains from them)
_BATCHES = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048])
_COLUMNS = (
    "mode", "quant", "tp", "pp", "ep", "attention_dp", "dp", "prefill_tp", "prefill_workers",
    "running_batch", "gpus", "ttft_s", "tpot_s", "tokens_per_s_per_gpu", "tokens_per_s_per_user",
)  # fmt: skip


@dataclass(frozen=True)
class SearchRequest:
    prompt: int
    gen: int
    gpus: int
    slo_ttft_s: float | None = None
    slo_tpot_s: float | None = None
    max_batch: int | None = None  # cap on the running batch (default: the engine's)


@dataclass(frozen=True)
class Shape:
    """One replica's layout and what does not depend on the batch."""

    quant: str
    layout: ReplicaLayout
    gpus: int  # devices of one replica (tp x pp)
    stages: tuple[Stage, ...]
    ctx: Context
    capacity: int  # running sequences one replica holds
    single_prefill_s: float
    prefill_per_token_s: float


@dataclass(frozen=True)
class ServingSearchResult:
    rows: tuple[dict[str, Any], ...]  # the Pareto frontier, best tokens/s per GPU first
    best_aggregated: dict[str, Any] | None
    best_disaggregated: dict[str, Any] | None
    generated: int
    feasible: int
    rejected: Mapping[str, int]
    seconds: float  # the sweep: generate, estimate, choose
    notes: tuple[str, ...] = field(default=())
    lookup_seconds: float = 0.0  # reading the model and hardware from the catalog
    slos_given: bool = False  # a TTFT or TPOT limit was set: 'feasible' counts layouts meeting it

    @property
    def fits(self) -> bool:
        """Some layout meets the SLOs (the CLI exits 1 when none does)."""
        return self.feasible > 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "frontier": [dict(r) for r in self.rows],
            "best_aggregated": self.best_aggregated,
            "best_disaggregated": self.best_disaggregated,
            "generated": self.generated,
            "feasible": self.feasible,
            "rejected": dict(self.rejected),
            "seconds": self.seconds,
            "lookup_seconds": self.lookup_seconds,
            "layouts_per_s": self.generated / self.seconds if self.seconds > 0 else None,
            "notes": list(self.notes),
        }


def _powers(limit: int) -> list[int]:
    return [2**i for i in range(int(math.log2(max(1, limit))) + 1)]


def layouts(cluster: Cluster, gpus: int, moe: bool, layers: int) -> list[ReplicaLayout]:
    """tp in powers of two that divide a node or span whole nodes; pp so tp x pp <= gpus;
    MoE: tensor parallel, or attention DP + expert parallel over the whole tp group."""
    per_node = cluster.nodes[0].count
    found = []
    for tp in _powers(gpus):
        if per_node % tp and tp % per_node:
            continue
        for pp in _powers(min(gpus // tp, layers, _MAX_PP)):
            found.append(ReplicaLayout(tp, pp))
            if moe and tp > 1:
                found.append(ReplicaLayout(tp, pp, ep=tp, attention_dp=tp))
                found.append(ReplicaLayout(tp, pp, ep=tp))
    return found


ShapeBuilder = Callable[
    [str, ReplicaLayout], "tuple[tuple[Stage, ...], Context, MemoryBreakdown | None]"
]


def build_shape(
    quant: str,
    layout: ReplicaLayout,
    builder: ShapeBuilder,
    memory_for: Callable[[tuple[Stage, ...], Context, float], MemoryBreakdown],
    request: SearchRequest,
    network: Link | None,
) -> Shape | str:
    """The shape, or why it is rejected (an engine rule's name, or memory)."""
    stages, ctx, _ = builder(quant, layout)
    broken = check_rules(ctx.engine, ctx.spec, stages, quant)
    if broken is not None:
        return f"engine rule {broken.rule}"
    request_tokens = request.prompt + request.gen
    one = memory_for(stages, ctx, ctx.spec.kv_cache_bytes(request_tokens, ctx.kv_dtype))
    if one.verdict == DOES_NOT_FIT:
        return "memory: one request does not fit"
    cap = request.max_batch or engine_max_batch(ctx, stages)
    free = memory_for(stages, ctx, 0.0)
    resident = resident_kv_tokens(ctx.overheads, request.prompt, request.gen, request_tokens)
    most = max_concurrency(ctx.spec, stages, free, resident, ctx.kv_dtype, cap)
    if most < 1:
        return "memory: no room for the KV cache"
    return Shape(
        quant=quant,
        layout=layout,
        gpus=sum(s.tp for s in stages),
        stages=stages,
        ctx=ctx,
        capacity=most,
        single_prefill_s=prefill_phase(ctx, stages, network, request.prompt).seconds,
        prefill_per_token_s=prefill_seconds_per_token_batched(ctx, stages, request.prompt),
    )


_STEPS: dict[int, tuple[Shape, np.ndarray, Any]] = {}


def _step(shape: Shape, network: Link | None, request: SearchRequest) -> tuple[np.ndarray, Any]:
    """Running batches 1, 2, 4 ... up to what the shape holds, and a decode step at each (one
    array evaluation per shape, reused by every disaggregated pair)."""
    hit = _STEPS.get(id(shape))
    if hit is not None and hit[0] is shape:
        return hit[1], hit[2]
    batch = np.unique(np.append(_BATCHES[shape.capacity > _BATCHES], shape.capacity))
    average = request.prompt + request.gen // 2
    step = decode_step_seconds(shape.ctx, shape.stages, network, average, batch)  # type: ignore[arg-type]
    _STEPS[id(shape)] = (shape, batch, step)
    return batch, step


def _aggregated(shape: Shape, network: Link | None, request: SearchRequest) -> dict[str, Any]:
    """Every running batch of one shape at once (continuous batching, ``serving``'s formulas
    with the replicas saturated: no queue)."""
    batch, step = _step(shape, network, request)
    own = request.prompt * shape.prefill_per_token_s
    fe = shape.ctx.overheads.frontend_token_s  # the API server's cap (serving_frontend)
    cycle = frontend_cycle_seconds(batch * own + request.gen * step, batch, request.gen, fe)
    budget = step_token_budget(shape.ctx, shape.stages)
    prefill_s = (shape.single_prefill_s, shape.prefill_per_token_s)
    dp = request.gpus // shape.gpus
    ttft = wave_ttft_seconds(batch, request.prompt, budget, prefill_s, step)
    tpot = wave_tpot_seconds(
        cycle, ttft, step, request.gen, step + budget * shape.prefill_per_token_s
    )
    staggered = closed_loop_ttft_seconds(
        batch, shape.single_prefill_s, step, float(step[0]), own, cycle
    )
    return {
        "running_batch": batch,
        "ttft_s": staggered + shape.ctx.overheads.request_overhead_s,
        "tpot_s": tpot,
        "tokens_per_s_per_gpu": batch * request.gen / cycle / shape.gpus,
        "tokens_per_s_per_user": 1.0 / tpot,
        "gpus": np.full(batch.shape, dp * shape.gpus),
        "dp": np.full(batch.shape, dp),
    }


def _disaggregated(
    pre: Shape, dec: Shape, links: tuple[Link | None, Link | None], request: SearchRequest
) -> dict[str, Any] | None:
    """Every (prefill workers, decode batch) pair of one prefill x decode shape at once."""
    network, between = links
    most_prefill = (request.gpus - dec.gpus) // pre.gpus
    if most_prefill < 1:
        return None
    batch, step = _step(dec, network, request)
    workers = np.arange(1, most_prefill + 1)[:, None]  # prefill workers x batches
    decoders = (request.gpus - workers * pre.gpus) // dec.gpus
    prefill_rate = workers / (request.prompt * pre.prefill_per_token_s)
    rate = np.minimum(prefill_rate, decoders * batch / (request.gen * step))
    gpus = workers * pre.gpus + decoders * dec.gpus
    kv = pre.ctx.spec.kv_cache_bytes(request.prompt, pre.ctx.kv_dtype)
    lanes = min(pre.layout.tp or 1, dec.layout.tp or 1)
    transfer = kv_transfer_seconds(kv, between, lanes)
    return {  # broadcast to (workers x batches) by _Blocks.add
        "running_batch": batch,
        "ttft_s": pre.single_prefill_s + transfer + step,
        "tpot_s": step,
        "tokens_per_s_per_gpu": rate * request.gen / gpus,
        "tokens_per_s_per_user": 1.0 / step,
        "gpus": gpus,
        "dp": decoders,
        "prefill_workers": workers,
    }


@dataclass
class _Blocks:
    """Evaluated arrays, one block per (mode, shape), flattened at the end."""

    meta: list[dict[str, Any]] = field(default_factory=list)
    arrays: list[dict[str, np.ndarray]] = field(default_factory=list)

    def add(self, meta: dict[str, Any], arrays: dict[str, Any]) -> None:
        values = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in arrays.values()))
        flat = {k: v.ravel() for k, v in zip(arrays, values, strict=True)}
        flat["block"] = np.full(values[0].size, len(self.meta), dtype=float)
        self.meta.append(meta)
        self.arrays.append(flat)

    def table(self) -> dict[str, np.ndarray]:
        keys = ("running_batch", "ttft_s", "tpot_s", "tokens_per_s_per_gpu",
                "tokens_per_s_per_user", "gpus", "dp", "prefill_workers", "block")  # fmt: skip
        return {
            k: np.concatenate([a.get(k, np.zeros(a["block"].shape)) for a in self.arrays])
            for k in keys
        }


def _meta(mode: str, shape: Shape, prefill: Shape | None = None) -> dict[str, Any]:
    layout = shape.layout
    return {
        "mode": mode, "quant": shape.quant, "tp": layout.tp, "pp": layout.pp, "ep": layout.ep,
        "attention_dp": layout.attention_dp,
        "prefill_tp": prefill.layout.tp if prefill else None,
        "prefill_pp": prefill.layout.pp if prefill else None,
    }  # fmt: skip


def _row(table: dict[str, np.ndarray], meta: list[dict[str, Any]], i: int) -> dict[str, Any]:
    row = dict(meta[int(table["block"][i])])
    for key in ("running_batch", "gpus", "dp", "prefill_workers"):
        row[key] = int(table[key][i])
    for key in ("ttft_s", "tpot_s", "tokens_per_s_per_gpu", "tokens_per_s_per_user"):
        row[key] = float(table[key][i])
    if row["mode"] == "aggregated":
        row.pop("prefill_workers")
    return row


def frontier(per_gpu: np.ndarray, per_user: np.ndarray) -> np.ndarray:
    """Indices on the Pareto frontier (no other row is better on both), fastest per user first;
    none when no row is left (every layout over an SLO)."""
    order = np.lexsort((-per_gpu, -per_user))
    if order.size == 0:
        return order
    best = np.maximum.accumulate(per_gpu[order])
    keep = np.concatenate(([True], best[1:] > best[:-1]))
    return order[keep]


def _slos(request: SearchRequest) -> bool:
    return request.slo_ttft_s is not None or request.slo_tpot_s is not None


def search_serving(
    shapes: list[Shape],
    links: tuple[Link | None, Link | None],
    request: SearchRequest,
    rejected: Counter[str],
    started: float,
) -> ServingSearchResult:
    """Evaluate every shape aggregated and every prefill x decode pair disaggregated."""
    network = links[0]
    blocks = _Blocks()
    _STEPS.clear()
    for shape in shapes:
        if shape.gpus <= request.gpus:
            blocks.add(_meta("aggregated", shape), _aggregated(shape, network, request))
    for pre in (s for s in shapes if s.layout.pp == 1 and s.layout.attention_dp == 1):
        for dec in shapes:
            if dec.quant != pre.quant:
                continue
            found = _disaggregated(pre, dec, links, request)
            if found is not None:
                blocks.add(_meta("disaggregated", dec, pre), found)
    if not blocks.arrays:
        seconds = time.perf_counter() - started
        return ServingSearchResult((), None, None, sum(rejected.values()), 0, rejected, seconds,
                                   slos_given=_slos(request))  # fmt: skip
    _STEPS.clear()
    table = blocks.table()
    generated = int(table["block"].size) + sum(rejected.values())
    ok = np.isfinite(table["tokens_per_s_per_gpu"]) & (table["tokens_per_s_per_gpu"] > 0)
    ok &= table["dp"] >= 1
    for key, limit, reason in (("ttft_s", request.slo_ttft_s, "TTFT over the SLO"),
                               ("tpot_s", request.slo_tpot_s, "TPOT over the SLO")):  # fmt: skip
        if limit is not None:
            over = ok & (table[key] > limit)
            rejected[reason] += int(over.sum())
            ok &= ~over
    index = np.flatnonzero(ok)
    pareto = index[
        frontier(table["tokens_per_s_per_gpu"][index], table["tokens_per_s_per_user"][index])
    ]
    pareto = pareto[np.argsort(-table["tokens_per_s_per_gpu"][pareto])]
    rows = tuple(_row(table, blocks.meta, int(i)) for i in pareto)
    aggregated = np.array([m["mode"] == "aggregated" for m in blocks.meta])
    is_aggregated = aggregated[table["block"][index].astype(int)]
    best = {}
    for mode, mine in (("aggregated", index[is_aggregated]),
                       ("disaggregated", index[~is_aggregated])):  # fmt: skip
        if mine.size:
            top = mine[np.argmax(table["tokens_per_s_per_gpu"][mine])]
            best[mode] = _row(table, blocks.meta, int(top))
    return ServingSearchResult(
        rows=rows,
        best_aggregated=best.get("aggregated"),
        best_disaggregated=best.get("disaggregated"),
        generated=generated,
        feasible=int(index.size),
        rejected=dict(rejected),
        seconds=time.perf_counter() - started,
        slos_given=_slos(request),
    )
