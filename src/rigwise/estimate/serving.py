"""Serving under load: continuous batching, a running batch, and a queue.

With continuous batching (Yu et al. 2022, Orca, OSDI; vLLM, Kwon et al. 2023) every step decodes
one token for each running sequence, so a step at batch B runs the weight GEMMs (the longer of
the weights read once and the FLOPs of B tokens) and then the attention (the longer of B KV
caches read and their FLOPs), plus fixed overheads (``inference.kernel_rooflines``). Prompts are
prefilled in compute-bound chunks mixed into the decode steps (chunked prefill, Agrawal et al.
2024, Sarathi-Serve, OSDI): over one request's life a replica spends
``B x prompt x prefill_per_token + gen x step(B)`` to emit ``B x gen`` tokens.

The running batch B is bounded by the engine's ``max_batch`` (vLLM ``--max-num-seqs`` 256,
SGLang ``max_running_requests``, TensorRT-LLM ``max_batch_size``) and by the KV cache the free
memory holds (``resident_kv_tokens``): at the full request length where the engine reserves it
at admission (TensorRT-LLM's default GUARANTEED_NO_EVICT scheduler), at prompt + gen / 2 where
PagedAttention blocks are allocated as a sequence grows (vLLM). Requests beyond B wait in a queue:
with N requests kept in flight (a closed loop, as benchmark clients do), Little's law (Little
1961, L = lambda W) gives each request's time in the system ``N x gen / aggregate``; what is not
service is queueing, and it is added to the time to first token; where a paged cache limits the
batch, the requests preempted mid-decode wait in the time per output token instead
(``serving_preemption``). Only one request that cannot fit at all is "does not fit"; concurrency
alone never is. The time per output token is the cycle less the first token over the other
tokens: the prompts chunked into a request's decode steps set it (``serving_tpot``).

Time to first token under load: benchmark clients keep C equal requests in a closed loop, so a
running batch is admitted together and its prompts are prefilled first come, first served in
scheduler steps of ``T`` prompt tokens (vLLM ``max_num_batched_tokens``). Request k has its
first token at the end of step ceil(k P / T), after min(ceil(k P / T) T, C P) prompt tokens;
averaged over k that is about min(C P, (C + 1) / 2 P + T / 2) tokens (half a step of rounding),
so TTFT grows with the prompts ahead, not with one prompt (``wave_ttft_seconds``). Such a wave
persists only while every request has the same length (``--ignore-eos``): the cohorts of one
wave finish a decode step apart and return together; a request that ends early leaves its wave
for good (a benchmark's mean over both:
``validation.inference_serving.benchmark_ttft_seconds``). With real output lengths a closed loop
desynchronises: a request arrives when another ends, lands in a running step (half a decode step
on average, none at concurrency 1, whose predecessor has just ended) and is prefilled in the
next step beside the C - 1 running decodes (``staggered_ttft_seconds``), behind any prompts that
arrived just before it (``prefill_collision_seconds``), so its TTFT grows slowly with C. That is
the ``ttft_s`` a plan reports, the wave being ``ttft_wave_s``; while requests queue for a slot
the wave (and the queue wait) stays. Both add the engine's per-request API-server work
(``engine_overheads.csv`` ``request_overhead_ms``: HTTP, tokenisation, streaming).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rigwise.estimate.elementwise import as_float, ceil, maximum, minimum
from rigwise.estimate.engine_overheads import EngineOverheads
from rigwise.estimate.engine_rules import engine_defaults
from rigwise.estimate.inference import Context, Phase
from rigwise.estimate.inference_batched import ReplicaSteps, prefill_seconds_per_token_batched
from rigwise.estimate.inference_memory import MemoryBreakdown, kv_split
from rigwise.estimate.inference_stages import Stage
from rigwise.estimate.serving_frontend import (
    burst_ttft_seconds,
    frontend_batch,
    frontend_cycle_seconds,
)
from rigwise.estimate.serving_preemption import burst_parked_seconds, preempted_requests
from rigwise.estimate.serving_tpot import wave_tpot_seconds
from rigwise.hardware import Link
from rigwise.models import ModelSpec
from rigwise.serialize import JsonObject


@dataclass(frozen=True)
class ServingEstimate(JsonObject):
    """Steady-state serving figures of ``replicas`` copies of one layout (its JSON: these
    fields)."""

    concurrency: int  # requests kept in flight (asked)
    running_batch: int  # sequences one replica decodes per step
    queued: int  # requests waiting for a slot, all replicas together
    max_concurrency: int  # per replica: min(max_batch, what the KV cache holds)
    aggregate_tokens_per_s: float
    per_user_tokens_per_s: float  # 1 / TPOT: the decode rate one user sees
    tokens_per_s_per_gpu: float
    ttft_s: float  # queue wait + own (chunked) prefill under load, arrivals staggered
    tpot_s: float  # time per output token after the first
    queue_wait_s: float
    step_seconds: float
    bound: str
    replicas: int = 1
    gpus: int = 1
    reason: str = ""
    kv_transfer_s: float = 0.0  # disaggregated: prefill -> decode KV cache hand-over per request
    mode: str = "aggregated"  # or "disaggregated"
    ttft_wave_s: float = 0.0  # TTFT when the running batch arrives together (fixed lengths)
    ttft_burst_s: float = 0.0  # mean TTFT when all `concurrency` requests arrive at once, one each
    tpot_burst_s: float = 0.0  # mean TPOT of those requests (preempted ones wait mid-decode)


@dataclass(frozen=True)
class Costs:
    """One replica's cost functions: a decode step at batch B, batched prefill per token."""

    step_seconds: Callable[[int], float]
    prefill_seconds_per_token: float
    single_prefill_seconds: float  # one prompt alone (the batch-1 prefill phase)
    compute_bound_at: Callable[[int], bool]
    chunk_tokens: int = 8192  # tokens per scheduler step (vLLM max_num_batched_tokens)
    request_overhead_s: float = 0.0  # API-server work per request, once (engine_overheads.csv)
    frontend_token_s: float = 0.0  # API-server CPU per streamed token: caps the rate (0: no cap)
    kv_preemption: bool = False  # paged KV cache limits the batch: newest preempted (preemption)
    engine_cap: int = 0  # the engine's max_batch: requests started (running + preempted) at most


def wave_prefill_tokens(admitted: Any, prompt: int, step_tokens: int) -> Any:
    """Mean prompt tokens prefilled up to the step that gives each of ``admitted`` requests
    (arriving together, ``prompt`` tokens each) its first token, with ``step_tokens`` a step:
    min(C P, (C + 1) / 2 P + T / 2). Floats or arrays of ``admitted``."""
    c = as_float(admitted)
    return minimum(c * prompt, (c + 1.0) / 2.0 * prompt + step_tokens / 2.0)


def wave_ttft_seconds(
    admitted: Any, prompt: int, budget: int, prefill_s: tuple[float, float], step_s: Any
) -> Any:
    """Mean time to first token of ``admitted`` requests arriving together, ``budget`` prompt
    tokens a step; ``prefill_s`` is (one prompt alone, batched seconds per prompt token): one
    prompt alone, the batched prefill of the prompt tokens ahead of it, and one decode step of
    the running batch per scheduler step waited (chunked prefill interleaves their decode)."""
    single_s, per_token_s = prefill_s
    tokens = wave_prefill_tokens(admitted, prompt, max(1, budget))
    steps = ceil(tokens / max(1, budget))
    return single_s + (tokens - prompt) * per_token_s + steps * step_s


def staggered_ttft_seconds(batch: Any, single_s: float, step_s: Any, step_one_s: float) -> Any:
    """Time to first token in a desynchronised closed loop of ``batch`` requests: half of the
    running decode step it lands in (none at batch 1), then one step with its own prompt
    (``single_s``, prefilled alone) and the batch - 1 running decodes, whose cost is what a step
    of ``batch`` (``step_s``) adds to a step of one (``step_one_s``). Floats or arrays."""
    landed = minimum(1.0, as_float(batch) - 1.0)  # 0 alone, 1 once others run
    return landed * step_s / 2.0 + single_s + maximum(0.0, step_s - step_one_s)


def prefill_collision_seconds(batch: Any, own_prefill_s: float, cycle_s: Any) -> Any:
    """Mean wait behind prompts that arrived just before, in a desynchronised loop: the other
    ``batch - 1`` requests spend ``own_prefill_s`` each of a cycle prefilling (utilisation rho
    as an arrival sees it: the arrival theorem of closed networks, Sevcik & Mitrani 1981), one
    prompt's prefill a deterministic service, so the M/D/1 (Pollaczek-Khinchine) wait
    rho S / (2 (1 - rho)) (Kleinrock 1975, Queueing Systems Vol. 1, Sec. 5.6); none alone."""
    rho = (as_float(batch) - 1.0) * own_prefill_s / cycle_s
    return rho * own_prefill_s / (2.0 * (1.0 - rho))


def closed_loop_ttft_seconds(
    batch: Any, single_s: float, step_s: Any, step_one_s: float, own_prefill_s: float, cycle_s: Any
) -> Any:
    """Steady-state time to first token of a desynchronised closed loop (before the engine's
    per-request overhead): ``staggered_ttft_seconds`` plus ``prefill_collision_seconds``; the
    planner and the layout search both take it from here. Floats or arrays."""
    staggered = staggered_ttft_seconds(batch, single_s, step_s, step_one_s)
    return staggered + prefill_collision_seconds(batch, own_prefill_s, cycle_s)


def step_token_budget(ctx: Context, stages: tuple[Stage, ...]) -> int:
    """Prompt tokens one scheduler step takes: the engine's default for the device
    (engine_defaults.csv ``step_tokens``, e.g. vLLM 2048 below 70 GiB) or its workspace."""
    found = engine_defaults(ctx.engine, stages[0].accelerator.memory_bytes).step_tokens
    return found or ctx.overheads.workspace_tokens


def engine_max_batch(ctx: Context, stages: tuple[Stage, ...]) -> int:
    """Sequences one replica runs at once by default: the engine's default for the device
    (engine_defaults.csv ``max_sequences``, e.g. vLLM 1024 from 70 GiB) or its catalog cap."""
    found = engine_defaults(ctx.engine, stages[0].accelerator.memory_bytes).max_sequences
    return found or ctx.overheads.max_concurrency


def kv_capacity_bytes(spec: ModelSpec, stages: tuple[Stage, ...], memory: MemoryBreakdown) -> float:
    """Model-wide KV bytes the free memory holds: the tightest stage sets it. Attention-DP
    ranks each keep their own requests' cache, so a stage holds ``attention_dp`` of them."""
    capacities = []
    for stage, device in zip(stages, memory.per_device, strict=True):
        fixed = device.weights_bytes + device.activations_bytes + device.overhead_bytes
        free = max(0.0, device.capacity_bytes - fixed)
        split = kv_split(spec, stage.attention_tp) * stage.attention_dp
        capacities.append(free * split / max(stage.layer_fraction, 1e-9))
    return min(capacities) if capacities else 0.0


def resident_kv_tokens(overheads: EngineOverheads, prompt: int, gen: int, context: int) -> int:
    """KV tokens one running request holds, for the running batch the cache admits. An engine
    that reserves the whole request at admission (TensorRT-LLM GUARANTEED_NO_EVICT, llama.cpp
    slots) holds prompt + gen; a paged engine that allocates blocks as a sequence grows and
    preempts when they run out (vLLM; engine_overheads.csv ``kv_reservation`` growing, sourced
    there) holds prompt + gen / 2 on average over the decode, the lengths of a closed loop's
    staggered requests being spread evenly over it."""
    full = min(context, prompt + gen)
    return min(full, prompt + -(-gen // 2)) if overheads.kv_grows else full


def max_concurrency(
    spec: ModelSpec,
    stages: tuple[Stage, ...],
    memory: MemoryBreakdown,
    request_tokens: int,
    kv_dtype: str,
    engine_cap: int,
) -> int:
    """Sequences of ``request_tokens`` whose KV caches fit, capped by the engine's max_batch.
    ``memory`` must hold no KV cache yet (it is what is left that counts)."""
    per_request = spec.kv_cache_bytes(request_tokens, kv_dtype)
    if per_request <= 0:
        return engine_cap
    return max(0, min(engine_cap, int(kv_capacity_bytes(spec, stages, memory) // per_request)))


def _no_room(concurrency: int, replicas: int, gpus: int) -> ServingEstimate:
    inf = float("inf")
    return ServingEstimate(
        concurrency, 0, concurrency, 0, 0.0, 0.0, 0.0, inf, inf, inf, inf, "memory",
        replicas, gpus, reason="No memory is left for even one request's KV cache.",
    )  # fmt: skip


def estimate_serving(
    concurrency: int,
    max_sequences: int,
    prompt: int,
    gen: int,
    costs: Costs,
    replicas: int = 1,
    gpus_per_replica: int = 1,
) -> ServingEstimate:
    """Serving figures for ``concurrency`` requests of ``prompt`` + ``gen`` tokens kept in
    flight over ``replicas`` (requests spread evenly), each running at most ``max_sequences``."""
    gpus = replicas * gpus_per_replica
    if max_sequences < 1:
        return _no_room(concurrency, replicas, gpus)
    per_replica = -(-concurrency // replicas)
    own_prefill = prompt * costs.prefill_seconds_per_token
    slots = max(1, min(per_replica, max_sequences))
    batch, step, cycle, frontend_bound = _running(slots, own_prefill, gen, costs)
    aggregate = batch * gen / cycle
    prefill_s = (costs.single_prefill_seconds, costs.prefill_seconds_per_token)
    ttft_service = float(wave_ttft_seconds(batch, prompt, costs.chunk_tokens, prefill_s, step))
    first_token = ttft_service if per_replica <= batch else own_prefill + step  # serving_tpot
    chunk_step = step + costs.chunk_tokens * costs.prefill_seconds_per_token
    tpot = plain_tpot = float(wave_tpot_seconds(cycle, first_token, step, gen, chunk_step))
    in_system = per_replica * gen / aggregate  # Little's law, closed loop of per_replica clients
    wait = max(0.0, in_system - ttft_service - (gen - 1) * tpot) if per_replica > batch else 0.0
    started = min(per_replica, costs.engine_cap) if costs.engine_cap else per_replica
    if costs.kv_preemption and per_replica > batch and gen > 1:  # serving_preemption
        parked_s = preempted_requests(prompt, gen, batch, started) * gen / aggregate
        tpot, wait = tpot + parked_s / (gen - 1), max(0.0, wait - parked_s)
    one, single = costs.step_seconds(1), costs.single_prefill_seconds
    staggered = float(closed_loop_ttft_seconds(batch, single, step, one, own_prefill, cycle))
    own = ttft_service if per_replica > batch else staggered  # queued: Little's law sets it
    queued = max(0, concurrency - replicas * batch)
    reason = _queue_reason(batch, queued, costs.frontend_token_s if frontend_bound else 0.0)
    life = ttft_service + (gen - 1) * plain_tpot  # first cohort's stay (oldest: not preempted)
    burst = burst_ttft_seconds(per_replica, batch, ttft_service, life, aggregate / gen, staggered)
    shape, queued_s = (prompt, gen, batch, started), burst - ttft_service
    moved = burst_parked_seconds(shape, gen / aggregate, queued_s) if costs.kv_preemption else 0.0
    total = aggregate * min(replicas, concurrency)  # fewer requests than replicas: some idle
    return ServingEstimate(
        concurrency=concurrency,
        running_batch=batch,
        queued=queued,
        max_concurrency=max_sequences,
        aggregate_tokens_per_s=total,
        per_user_tokens_per_s=1.0 / tpot,
        tokens_per_s_per_gpu=total / gpus,
        ttft_s=wait + own + costs.request_overhead_s,
        tpot_s=tpot,
        queue_wait_s=wait,
        step_seconds=step,
        bound=_bound(frontend_bound, costs.compute_bound_at(batch)),
        replicas=replicas,
        gpus=gpus,
        reason=reason,
        ttft_wave_s=wait + ttft_service + costs.request_overhead_s,
        ttft_burst_s=burst - moved + costs.request_overhead_s,
        tpot_burst_s=plain_tpot + moved / max(1, gen - 1),
    )


def _running(
    slots: int, own_prefill_s: float, gen: int, costs: Costs
) -> tuple[int, float, float, bool]:
    """(running batch, its decode step, one request's cycle, front-end bound?) of a replica
    with ``slots`` requests admissible: the engine's, unless its API server is the slower
    (``serving_frontend``), which holds the batch and stretches the cycle."""

    def engine_cycle(running: int) -> float:
        return running * own_prefill_s + gen * costs.step_seconds(running)

    fe = costs.frontend_token_s
    batch = frontend_batch(slots, gen, engine_cycle, fe)
    step = costs.step_seconds(batch)
    engine = batch * own_prefill_s + gen * step
    cycle = float(frontend_cycle_seconds(engine, batch, gen, fe))
    return batch, step, cycle, fe > 0.0 and batch * gen * fe >= engine


def _queue_reason(batch: int, queued: int, frontend_token_s: float) -> str:
    if not queued:
        return ""
    why = (
        f"the API server streams at most {1.0 / frontend_token_s:.0f} tokens/s"
        if frontend_token_s > 0.0
        else "max_batch and KV cache"
    )
    return f"{batch} requests run at once per replica ({why}); {queued} wait in the queue."


def _bound(frontend: bool, compute: bool) -> str:
    if frontend:
        return "front end (API server)"
    return "compute" if compute else "memory bandwidth"


def replica_costs(
    ctx: Context, stages: tuple[Stage, ...], network: Link | None, prompt: int, gen: int,
    prefill: Phase, kv_preemption: bool = False, engine_cap: int = 0,
) -> Costs:  # fmt: skip
    """The cost functions of one replica laid out as ``stages`` (``kv_preemption`` and
    ``engine_cap``: see ``Costs``)."""
    steps = ReplicaSteps(ctx, stages, network, prompt + gen // 2)
    return Costs(
        step_seconds=steps.step,
        prefill_seconds_per_token=prefill_seconds_per_token_batched(ctx, stages, prompt),
        single_prefill_seconds=prefill.seconds,
        compute_bound_at=steps.compute_bound,
        chunk_tokens=step_token_budget(ctx, stages),
        request_overhead_s=ctx.overheads.request_overhead_s,
        frontend_token_s=ctx.overheads.frontend_token_s,
        kv_preemption=kv_preemption,
        engine_cap=engine_cap,
    )


def serve_plan(
    ctx: Context,
    stages: tuple[Stage, ...],
    free_memory: MemoryBreakdown,
    network: Link | None,
    concurrency: int | str,
    shape: tuple[int, int, int],
    prefill: Phase,
    max_batch: int | None = None,
    replicas: int = 1,
) -> ServingEstimate:
    """Serving figures for a planned deployment; ``concurrency`` may be 'max' (every slot of
    every replica busy). ``shape`` is (prompt, gen, context); ``free_memory`` is the memory
    with no KV cache. ``max_batch`` defaults to the engine's."""
    prompt, gen, context = shape
    cap = max_batch or engine_max_batch(ctx, stages)
    request = resident_kv_tokens(ctx.overheads, prompt, gen, context)
    most = max_concurrency(ctx.spec, stages, free_memory, request, ctx.kv_dtype, cap)
    wanted = most * replicas if concurrency == "max" else int(concurrency)
    gpus = sum(stage.tp for stage in stages)
    preemption = ctx.overheads.kv_grows and most < cap
    costs = replica_costs(ctx, stages, network, prompt, gen, prefill, preemption, cap)
    return estimate_serving(max(1, wanted), most, prompt, gen, costs, replicas, gpus)
