"""The layout searches of a batch of training queries (``api/train_batch.py``), run together:
searches that share a model, hardware, factors and workload (its sequence length and global
batch aside) have their candidates evaluated in one call, as one array, and each is ranked on
its own rows. Every result is what ``search_layouts`` gives for that search alone; its
``seconds`` are its own generating and ranking time and its rows' share of the evaluation.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from rigwise.api.train import Search
from rigwise.estimate.training import evaluate
from rigwise.estimate.training_layout import Workload, per_row
from rigwise.estimate.training_step import Fabric
from rigwise.search import SearchResult, generated, pruned_apart, ranked, search_layouts

# Sizes below this are evaluated as per-row int64 arrays: their products (tokens per step)
# stay exact, as Python's integers are; larger ones are evaluated with their own workload.
MERGE_LIMIT = 2**31
Key = tuple[object, ...]


@functools.lru_cache(maxsize=4096)  # dataclasses.replace costs more than hashing the workload
def sizeless(work: Workload) -> Workload:
    """``work`` without the sizes that ``per_row`` evaluates per row (and the tokens, which
    no evaluation reads), when they are small enough to be; else ``work`` itself."""
    sizes = (work.seq_len, work.global_batch)
    if all(type(v) is int and 0 < v < MERGE_LIMIT for v in sizes):
        return replace(work, seq_len=0, global_batch=0, tokens=None)
    return work


def evaluated_rows(works: Sequence[Workload], counts: Sequence[int]) -> Workload:
    """The workload to evaluate ``counts[i]`` rows of each of ``works`` (equal but for their
    ``sizeless`` parts) in one call: the first one when their sizes are equal, else it with
    each row's sizes (``per_row``)."""
    if len({(w.seq_len, w.global_batch) for w in works}) == 1:
        return works[0]
    seq = np.repeat(np.array([w.seq_len for w in works], dtype=np.int64), counts)
    batch = np.repeat(np.array([w.global_batch for w in works], dtype=np.int64), counts)
    return per_row(works[0], seq, batch)


def fabric_key(fabric: Fabric) -> Key:
    """A fabric's devices (the cached catalog objects, by identity) and shape."""
    devices = (id(fabric.accelerator), id(fabric.intra_link), id(fabric.network))
    return (*devices, fabric.gpus_per_node, fabric.network_ports, fabric.power_limit_watts)


def search_key(args: Sequence[Any]) -> Key:
    """Equal for ``search_layouts`` arguments that give the same search (the geometry and
    factors by identity: the batch's setups hold them, so no id is reused meanwhile)."""
    geo, work, fabric, factors, gpus, fixed, *rest = args
    return (id(geo), work, *fabric_key(fabric), id(factors), gpus, *sorted(fixed.items()), *rest)


def _share_key(args: Sequence[Any]) -> Key:
    geo, work, fabric, factors, gpus = args[:5]
    return (id(geo), sizeless(work), *fabric_key(fabric), id(factors), gpus)


def searched_together(requests: Sequence[Sequence[Any]]) -> dict[Key, SearchResult]:
    """The result of each distinct search among ``requests`` (``search_layouts`` arguments),
    by ``search_key``. A share that fails is left out: each of its searches then runs alone
    when asked (``memo``), and raises for its own query."""
    unique: dict[Key, Sequence[Any]] = {}
    for args in requests:
        unique.setdefault(search_key(args), args)
    shares: dict[Key, list[Key]] = {}
    for key, args in unique.items():
        shares.setdefault(_share_key(args), []).append(key)
    found: dict[Key, SearchResult] = {}
    for keys in shares.values():
        try:
            found.update(zip(keys, _together([unique[k] for k in keys]), strict=True))
        except Exception:  # each of these searches runs alone when asked, raising for its query
            continue
    return found


def _together(requests: list[Sequence[Any]]) -> list[SearchResult]:
    """``search_layouts`` of each request (all of one share): their rules applied and their
    survivors evaluated in one call each."""
    geo, _, fabric, factors, gpus = requests[0][:5]
    works, per_node = [args[1] for args in requests], fabric.gpus_per_node
    started = time.perf_counter()
    lays = [generated(geo, a[1], gpus, per_node, a[5], a[6], a[7]) for a in requests]
    sizes = [len(lay) for lay in lays]
    rows = evaluated_rows(works, sizes)
    survivors, found = pruned_apart(geo, rows, lays, gpus, per_node)
    counts = [len(f.survivors) for f in found]
    ev = None
    if sum(counts):
        ev = evaluate(geo, evaluated_rows(works, counts), survivors, fabric, factors)
    shared = time.perf_counter() - started
    results, start = [], 0
    for args, one, count, size in zip(requests, found, counts, sizes, strict=True):
        # its share of the time spent on all: by its generated and its evaluated layouts
        own = shared * (size / sum(sizes) + count / max(sum(counts), 1)) / 2
        began = time.perf_counter() - own
        results.append(ranked(one, ev if count else None, start, fabric, factors, args[6], began))
        start += count
    return results


def memo(searches: dict[Key, SearchResult]) -> Search:
    """``search_layouts`` answered from ``searches`` (a search not there is run, and kept)."""

    def search(*args: Any) -> SearchResult:
        key = search_key(args)
        result = searches.get(key)
        if result is None:
            result = searches[key] = search_layouts(*args)
        return result

    return search
