"""Candidate builds for the designer and their best weight format.

A candidate is hardware only (one box with N GPUs, several boxes over a network, an Apple
machine, or rented GPUs); ``evaluate_quants`` asks the planner for each weight format of
parts/designer_formats.csv, best quality first, and keeps the first that fits and reaches the
target (else the fastest that fits, so the rejection reason is the honest one).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rigwise.catalog.loader import read_csv
from rigwise.hardware import Accelerator

if TYPE_CHECKING:
    from rigwise.design.designer import DesignRequest
    from rigwise.design.planner import Estimate, Planner

BOX_GPU_COUNTS = (1, 2, 3, 4, 6, 8)  # search space, not a spec
MULTI_NODE = ((2, 1), (2, 2), (4, 1), (4, 2))  # (nodes, GPUs per node)
RENT_COUNTS = (1, 2, 4, 8)
NETWORK = "10gbe"


class Rejections:
    """Rejected candidates counted by reason, with the first few examples of each."""

    def __init__(self, examples_per_reason: int = 3) -> None:
        self.counts: Counter[str] = Counter()
        self.examples: dict[str, list[str]] = {}
        self._keep = examples_per_reason

    def add(self, reason: str, example: str) -> None:
        self.counts[reason] += 1
        kept = self.examples.setdefault(reason, [])
        if len(kept) < self._keep:
            kept.append(example)


@dataclass(frozen=True)
class Candidate:
    kind: str  # single-gpu | multi-gpu-box | multi-node | apple | rent
    gpu: Accelerator
    count: int  # GPUs per node
    nodes: int = 1
    network: str | None = None

    @property
    def on(self) -> str:
        return self.gpu.id if self.count == 1 else f"{self.count}x {self.gpu.id}"


def _unit_price(gpu: Accelerator, used: bool) -> float | None:
    from rigwise.design.prices import user_price

    mine = user_price("gpu", gpu.id, "used" if used else "new")
    if mine is not None:
        return mine.usd
    if used and gpu.street_price_usd is not None:
        return gpu.street_price_usd
    return gpu.launch_price_usd if gpu.launch_price_usd is not None else gpu.street_price_usd


def _box_candidates(
    gpu: Accelerator, price: float, budget: float | None, rejected: Rejections
) -> Iterator[Candidate]:
    for count in BOX_GPU_COUNTS:
        if budget is not None and price * count > budget:
            rejected.add("over budget", f"{count}x {gpu.id}: GPUs alone ${price * count:,.0f}")
            continue
        yield Candidate("single-gpu" if count == 1 else "multi-gpu-box", gpu, count)
    for nodes, per_node in MULTI_NODE:
        if budget is not None and price * per_node * nodes > budget:
            total = price * per_node * nodes
            rejected.add("over budget", f"{nodes} nodes x {per_node}x {gpu.id}: ${total:,.0f}")
            continue
        yield Candidate("multi-node", gpu, per_node, nodes, NETWORK)


def generate(
    pool: Sequence[Accelerator], used: bool, budget: float | None, rejected: Rejections
) -> Iterator[Candidate]:
    """Every hardware candidate; the ones priced over budget on GPUs alone are counted out."""
    for gpu in pool:
        if gpu.rental_usd_per_hour and gpu.kind in ("gpu", "unified"):
            for count in RENT_COUNTS:
                yield Candidate("rent", gpu, count)
        if gpu.kind == "unified":
            if gpu.launch_price_usd is None and gpu.street_price_usd is None:
                rejected.add("no price", gpu.id)
            elif budget is not None and (_unit_price(gpu, used) or 0.0) > budget:
                rejected.add("over budget", f"{gpu.id}: ${_unit_price(gpu, used) or 0.0:,.0f}")
            else:
                yield Candidate("apple", gpu, 1)
            continue
        if gpu.kind != "gpu" or gpu.form_factor not in ("", "pcie"):
            continue
        price = _unit_price(gpu, used)
        if price is None:
            rejected.add("no price", gpu.id)
            continue
        yield from _box_candidates(gpu, price, budget, rejected)


@dataclass(frozen=True)
class Format:
    """How the model runs: engine, weight format, multi-GPU split (None = planner default)."""

    engine: str | None = None
    quant: str | None = None
    split: str | None = None
    method: str | None = None  # training planner method (finetune/train rows)


@functools.cache
def formats_for(task: str, method: str | None = None) -> tuple[Format, ...]:
    """The task's rows, best quality first; ``method`` keeps only its rows (without it, full
    fine-tunes are left out: a fine-tune on one box means LoRA or QLoRA)."""
    rows = [r for r in read_csv("parts/designer_formats.csv") if r["task"] == task]
    if method is not None:
        rows = [r for r in rows if r.get("method") == method]
    elif task == "finetune":
        rows = [r for r in rows if r.get("method") != "full"]
    rows.sort(key=lambda r: -float(r["quality_rank"]))
    found = tuple(
        Format(r["engine"] or None, r["quant"] or None, r["split"] or None, r.get("method") or None)
        for r in rows
    )
    return found or (Format(method=method),)


def _target_met(request: DesignRequest, estimate: Estimate) -> bool:
    if request.task in ("infer", "serve"):
        return not request.target_tps or (estimate.decode_tokens_per_s or 0) >= request.target_tps
    if request.deadline_s:
        return (
            estimate.time_to_train_s is not None and estimate.time_to_train_s <= request.deadline_s
        )
    return True


def _speed(estimate: Estimate) -> float:
    if estimate.decode_tokens_per_s is not None:
        return estimate.decode_tokens_per_s
    return 1.0 / estimate.time_to_train_s if estimate.time_to_train_s else 0.0


def _weights_can_fit(
    weights_of: Callable[[str], float] | None, quant: str | None, cand: Candidate
) -> bool:
    """A necessary condition only (the planner decides the rest): the quantized weights are no
    larger than the candidate's device memory summed over GPUs and nodes."""
    if weights_of is None or quant is None:
        return True
    return weights_of(quant) <= cand.gpu.memory_bytes * cand.count * cand.nodes


def evaluate_formats(
    planner: Planner,
    request: DesignRequest,
    cand: Candidate,
    weights_of: Callable[[str], float] | None = None,
) -> tuple[Format | None, Estimate | None]:
    """(format, estimate): best quality meeting the target, else the fastest that fits.
    ``weights_of(quant)`` (the model's weight bytes), when known, skips hopeless formats."""
    fitting: list[tuple[Format, Estimate]] = []
    for fmt in formats_for(request.task, request.method):
        if fmt.split == "tensor" and cand.count == 1:
            continue
        if not _weights_can_fit(weights_of, fmt.quant, cand):
            continue  # the weights alone exceed every byte the candidate has: no need to plan
        estimate = planner(
            task=request.task,
            model=request.model,
            on=cand.on,
            nodes=cand.nodes,
            network=cand.network,
            engine=fmt.engine,
            quant=fmt.quant,
            split=fmt.split,
            concurrency=request.concurrency,
            tokens=request.tokens,
            method=fmt.method,
        )
        if not estimate.fits:
            continue
        if _target_met(request, estimate):
            return fmt, estimate
        fitting.append((fmt, estimate))
    if not fitting:
        return None, None
    return max(fitting, key=lambda pair: _speed(pair[1]))
