"""Preemption in a paged engine whose KV cache limits the running batch (vLLM).

vLLM V1's scheduler (vllm/v1/core/sched/scheduler.py ``Scheduler.schedule``) admits a waiting
request as soon as the KV blocks of its prompt can be allocated, reserving nothing for its
growth; when a running request cannot get a block for its next token the newest running request
is preempted (its blocks freed, ``_preempt_request``) and put back at the front of the waiting
queue, to be recomputed (prefix caching, on by default in V1, reuses its blocks not yet
evicted); no waiting request is admitted in a step that preempted. With a queue of equal
requests (prompt P, gen G) the cache stays full: the running requests hold P + G / 2 tokens on
average (each passes every length once while running), so the running batch B and the
throughput are those of ``serving.resident_kv_tokens``; but more requests are past their first
token than run. The preempted ones wait mid-decode, so that wait lands in the time per output
token, not in the time to first token.

How many: a wave of requests admitted together into an empty cache of K tokens is K / P
requests; while they grow to P + t tokens only K / (P + t) of them run, so over their G steps
the running batch averages K ln(1 + G / P) / G and the requests past first token are
``(G / P) / ln(1 + G / P)`` times it (``wave_past_ratio``). A closed loop does not stay one
wave: completions spread over the cycle, the cache frees part by part and the admissions spread
with it. The steady state of the rules above (the discrete-event simulation in
tests/estimate/test_serving_preemption.py) sits halfway between one wave and none
(``past_ratio``: 1.22 at G = P, 1.6-1.7 at G = 4 P, 1.05 at G = P / 4); that halfway is read off
the simulation of the documented rules, not derived, and no measured row set it. It holds to
about 10 % of the simulated steady ratio for G up to 4 P (G = P / 2, P, 2 P, 4 P: 1.15, 1.23,
1.42, 1.60 simulated against 1.12, 1.22, 1.41, 1.74); for longer outputs it overstates (G = 8 P:
2.0 against 2.3; G = 19 P: 2.5-2.7 against 3.7). The simulated steady state is a wave that
persists: a cohort admitted together runs to the end together and frees the cache at once. It
needs equal lengths (the requests rigwise plans; ``--ignore-eos`` benchmarks): with output
lengths spread uniformly +-30-90 % around G the same simulation keeps less (1.07 at G = P,
1.35-1.40 at G = 4 P), which this ratio overstates.

With few requests queued beyond the batch, few are preempted: at most those queued
(``preempted_requests``), so the wait moves from TTFT to TPOT continuously in the number
queued. The simulation parks two thirds to four fifths of a few queued (the rest wait for
their first token) where this bound parks them all, until the steady number is reached.

A benchmark's first ``concurrency`` requests arrive at once, a burst (``burst_ttft_seconds``):
its first cohort is admitted as one wave, but the requests behind it join a churning cache,
and in the simulation the burst's requests spend about the steady state's time parked, not the
first wave's ratio's (``burst_parked_seconds``; the benchmark reader
``validation.inference_serving.benchmark_tpot_seconds`` weighs the burst with the steady state).
"""

from __future__ import annotations

import math


def wave_past_ratio(prompt: int, gen: int) -> float:
    """Requests past first token over the mean running batch, for one wave of equal requests
    admitted together into a full KV cache and preempted newest first as they grow:
    (G / P) / ln(1 + G / P); 1 when nothing grows."""
    if prompt <= 0 or gen <= 0:
        return 1.0
    ratio = gen / prompt
    return ratio / math.log1p(ratio)


def past_ratio(prompt: int, gen: int) -> float:
    """Requests past first token over the running batch in the steady state of a closed loop
    whose KV cache limits the batch (module docstring): halfway between none and one wave."""
    return (1.0 + wave_past_ratio(prompt, gen)) / 2.0


def preempted_requests(prompt: int, gen: int, batch: int, in_flight: int) -> float:
    """Requests of one replica that are past their first token but preempted, waiting for KV
    blocks: (past_ratio - 1) x batch, at most the requests in flight beyond the batch: so
    continuous in the number queued, and none when none queue (a request is preempted only
    when one beyond the batch was admitted). The caller caps ``in_flight`` at the engine's
    max_batch (vLLM ``max_num_seqs``): a preempted request goes back to the front of the
    waiting queue, so no new one starts before it runs again, and the requests started
    (running and preempted) never exceed what once ran together."""
    extra = (past_ratio(prompt, gen) - 1.0) * batch
    return max(0.0, min(float(in_flight - batch), extra))


def burst_parked_seconds(
    shape: tuple[int, int, int, int], request_s: float, queued_s: float
) -> float:
    """Mean seconds the requests of a burst (``shape``: prompt, gen, running batch, requests,
    all arriving at once into an idle engine) wait mid-decode rather than before their first
    token: the steady state's parked requests x ``request_s`` (gen / aggregate: Little's law),
    at most the burst's mean wait before its first token (``queued_s``), so each request's
    whole stay stays what the throughput sets. The first wave's own ratio
    (``wave_past_ratio``) lasts one life of its first cohort; the burst's requests beyond it
    join the steady churn: in the reference simulation (tests/estimate/test_serving_preemption.py)
    a burst's requests spend about the steady state's parked time, not the wave's."""
    prompt, gen, batch, requests = shape
    parked = preempted_requests(prompt, gen, batch, requests)
    return max(0.0, min(queued_s, parked * request_s))
