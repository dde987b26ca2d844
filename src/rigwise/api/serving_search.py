"""``search_serving(**options) -> ServingSearchResult``: the best serving layouts for a model on
a cluster under TTFT/TPOT SLOs (``rigwise infer MODEL --on HW --search``).

Options are ``plan_inference``'s (model, on, nodes, network, cluster, quant, kv_quant, prompt,
gen, engine, max_batch) plus ``gpus`` (how many of the cluster's devices to use), ``slo_ttft``
and ``slo_tpot`` (durations such as '1s', '40ms'). The estimating is in
``rigwise.estimate.serving_search``.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from rigwise.api import infer_stages as _stages
from rigwise.api.context import request_too_long, require_context_length
from rigwise.api.infer_memory import memory_of
from rigwise.errors import InputError
from rigwise.estimate.inference import Context
from rigwise.estimate.inference_efficiency import catalog_efficiency
from rigwise.estimate.inference_memory import MemoryBreakdown
from rigwise.estimate.inference_stages import Stage
from rigwise.estimate.serving_layout import ReplicaLayout, replica_stages
from rigwise.estimate.serving_search import (
    SearchRequest,
    ServingSearchResult,
    Shape,
    build_shape,
    layouts,
    search_serving,
)
from rigwise.option_fields import no_flag
from rigwise.units import parse_seconds, whole_count
from rigwise.validate_input import merged_options, validated

if TYPE_CHECKING:
    from collections.abc import Mapping

    from rigwise.hardware import Cluster
    from rigwise.models import ModelSpec

# The search's work grows with the devices (disaggregated pairs x prefill worker counts):
# 8,192 devices (1,024 nodes of 8, the --nodes bound) take ~5 s and ~1.7 GB; 65,536 took 37 s
# and 13 GB, and one node of 1,048,576 devices was killed for memory.
MAX_SEARCH_DEVICES = 8192
_SERVER_QUANTS = ("BF16", "FP8", "NVFP4")  # searched when --quant is not given; rules prune


class SearchOptions(BaseModel):
    """The options of ``rigwise infer --search`` (``plan_inference``'s, plus ``gpus`` and the
    SLOs); unknown keys are an error naming the key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    on: str | None = None
    nodes: int = Field(1, ge=1, le=1024)
    network: str | None = None
    cluster: str | None = None
    quant: str | None = None
    kv_quant: str | None = None
    prompt: int = Field(1024, ge=1, le=1_000_000)
    gen: int = Field(256, ge=1, le=1_000_000)
    engine: str | None = None
    max_batch: int | None = Field(None, ge=1, le=65_536)
    gpus: int | None = Field(None, ge=1, le=MAX_SEARCH_DEVICES)
    slo_ttft: str | None = None
    slo_tpot: str | None = None

    @field_validator("nodes", "prompt", "gen", "max_batch", "gpus", mode="before")
    @classmethod
    def _counts(cls, value: object, info: ValidationInfo) -> object:
        """Token counts read '8k' as a single plan reads them (it was refused: 'Input should be
        a valid integer'); devices, nodes and batch take digits, as plan_inference's do. A bool
        is no count ({"prompt": true} was a 1-token prompt)."""
        value = no_flag(None)(value)
        if info.field_name in ("prompt", "gen") and isinstance(value, str):
            return whole_count(value, "1024 or 8k")
        return value


def search_serving_layouts(
    options: SearchOptions | None = None, /, **fields: object
) -> ServingSearchResult:
    """Search aggregated and disaggregated layouts; pass a ``SearchOptions`` or its fields as
    keywords (keywords override)."""
    started = time.perf_counter()
    given = merged_options(options, fields)
    opts = validated(SearchOptions, given, "Bad option", "See `rigwise infer --help`.")
    spec = _stages.model_of(opts.model)
    opts, fitted = _fitted_request(opts, given, spec)
    cluster = _stages.cluster_of(opts.on, opts.nodes, opts.network, opts.cluster)
    engine = opts.engine or "vllm"
    _stages.check_engine(engine, cluster)
    total = _devices(opts.gpus, cluster)
    quants = [_stages.canonical_quant(q) for q in ([opts.quant] if opts.quant else _SERVER_QUANTS)]

    def builder(
        quant: str, layout: ReplicaLayout
    ) -> tuple[tuple[Stage, ...], Context, MemoryBreakdown | None]:
        stages = replica_stages(
            cluster, "tensor", layout, lambda a: _stages.overheads(engine, a), spec.num_layers
        )
        ctx = Context(
            spec=spec,
            engine=engine,
            quant=quant,
            kv_dtype=opts.kv_quant or _stages.default_kv(engine, quant),
            weights_bytes=spec.weights_bytes(quant),
            overheads=_stages.overheads(engine, stages[0].accelerator),
            offload_efficiency=catalog_efficiency(engine, "cpu", quant.lower()),
            calibration=None,
            max_sequences=opts.max_batch,
        )
        return stages, ctx, None

    def memory_for(stages: tuple[Stage, ...], ctx: Context, kv: float) -> MemoryBreakdown:
        return memory_of(spec, stages, ctx, kv, engine)

    request = _request(opts, total)
    looked_up = time.perf_counter()
    rejected: Counter[str] = Counter()
    shapes: list[Shape] = []
    if opts.kv_quant:  # a bad name is bad input, not a rejection per layout
        _stages.check_kv(engine, opts.kv_quant)
    for quant in quants:
        for layout in layouts(cluster, total, spec.moe is not None, spec.num_layers):
            try:
                found = build_shape(quant, layout, builder, memory_for, request, cluster.network)
            except InputError:  # a mixed cluster: tp sized by node 0 that a later node lacks
                found = "layout does not fit every node"
            if isinstance(found, str):
                rejected[found] += 1
            else:
                shapes.append(found)
    between = cluster.network if len(cluster.nodes) > 1 else cluster.nodes[0].intra_link
    result = search_serving(shapes, (cluster.network, between), request, rejected, looked_up)
    notes = (*_notes(result, total), *fitted)
    result = replace(result, lookup_seconds=looked_up - started, notes=notes)
    return _with_intervals(result, engine, cluster)


def _fitted_request(
    opts: SearchOptions, given: Mapping[str, object], spec: ModelSpec
) -> tuple[SearchOptions, tuple[str, ...]]:
    """As a single plan, no layout serves a request past the model's context (bad input); a
    default prompt is fitted to it instead: gpt2's 1,024 tokens refused a search given no
    request options ('--prompt 1,024 + --gen 256', neither given)."""
    require_context_length(spec)
    if opts.prompt + opts.gen <= spec.max_context:
        return opts, ()
    if "prompt" in given or spec.max_context <= opts.gen:
        request_too_long(opts.prompt, opts.gen, spec)
    prompt = spec.max_context - opts.gen
    note = (
        f"--prompt {prompt:,}: the default {opts.prompt:,} fitted to {spec.name}'s "
        f"{spec.max_context:,}-token context with --gen {opts.gen:,}."
    )
    return opts.model_copy(update={"prompt": prompt}), (note,)


def _notes(result: ServingSearchResult, total: int) -> tuple[str, ...]:
    """The result's notes, and why no disaggregated layout was tried on one device."""
    if total > 1:
        return result.notes
    return (
        *result.notes,
        f"Disaggregated layouts need 2 or more devices (a prefill and a decode worker); "
        f"{total} given.",
    )


def _devices(gpus: int | None, cluster: Cluster) -> int:
    """The devices the search may use: ``--gpus``, at most the cluster's (all by default, at
    most ``MAX_SEARCH_DEVICES``)."""
    count = cluster.accelerator_count
    if gpus is not None and gpus > count:
        raise InputError(
            f"--gpus {gpus} is more than the {count} devices given.",
            hint=f"Use --gpus {count} or fewer, or add devices (--on 'Nx GPU', --nodes).",
        )
    if gpus is None and count > MAX_SEARCH_DEVICES:
        raise InputError(
            f"--search covers up to {MAX_SEARCH_DEVICES:,} devices; {count:,} given.",
            hint=f"Use --gpus {MAX_SEARCH_DEVICES} or fewer: the search lays out that many.",
        )
    return gpus or count


def _with_intervals(
    result: ServingSearchResult, engine: str, cluster: Cluster
) -> ServingSearchResult:
    """Each frontier row and best layout with its P10-P90 ranges (``*_interval``)."""
    from rigwise.estimate.plan_intervals import add_search_intervals

    ids = sorted({node.accelerator.id for node, _ in cluster.runs})

    def one(row: dict[str, Any] | None) -> dict[str, Any] | None:
        return add_search_intervals([row], engine, ids)[0] if row is not None else None

    return replace(
        result,
        rows=tuple(add_search_intervals(result.rows, engine, ids)),
        best_aggregated=one(result.best_aggregated),
        best_disaggregated=one(result.best_disaggregated),
    )


def _request(opts: SearchOptions, gpus: int) -> SearchRequest:
    return SearchRequest(
        prompt=opts.prompt,
        gen=opts.gen,
        gpus=gpus,
        slo_ttft_s=_slo(opts.slo_ttft),
        slo_tpot_s=_slo(opts.slo_tpot),
        max_batch=opts.max_batch,
    )


def _slo(text: str | None) -> float | None:
    """A latency limit in seconds (0 is a limit no layout meets: a result, exit 1)."""
    return parse_seconds(text) if text is not None else None
