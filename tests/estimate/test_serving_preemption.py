"""serving_preemption against a discrete-event simulation of vLLM V1's documented scheduler
rules (vllm/v1/core/sched/scheduler.py Scheduler.schedule): running requests first, each taking
the KV slot of its next token and preempting the newest running request (recompute, back to the
front of the waiting queue) when none is free; waiting requests admitted first come, first served
while their whole context fits, only in a step that preempted none. One token a slot (a block of
one), prefill inside one step, a closed loop of equal requests."""

from __future__ import annotations

import math
from collections import deque
from dataclasses import replace

import pytest

from rigwise.estimate.serving import Costs, estimate_serving
from rigwise.estimate.serving_frontend import burst_ttft_seconds
from rigwise.estimate.serving_preemption import (
    burst_parked_seconds,
    past_ratio,
    preempted_requests,
    wave_past_ratio,
)


def _schedule(running: list[list[int]], waiting: deque[list[int]], free: int, prompt: int) -> int:
    """One scheduler step of the rules above on requests [generated, slots held, ...]: each
    running request takes the slot of its next token, preempting the newest when none is free;
    then, if none was preempted, waiting requests are admitted in order while their whole
    context fits. Returns the free slots left."""
    preempted, i = False, 0
    while i < len(running):
        request = running[i]
        while free < 1 and request in running:
            victim = running.pop()
            free, victim[1], preempted = free + victim[1], 0, True
            waiting.appendleft(victim)
        if request not in running:
            break
        free, request[1], i = free - 1, request[1] + 1, i + 1
    while not preempted and waiting and free >= prompt + waiting[0][0]:
        request = waiting.popleft()
        free, request[1] = free - prompt - request[0], prompt + request[0]
        running.append(request)
    return free


def _simulate(capacity: int, prompt: int, gen: int, clients: int, steps: int) -> float:
    """Mean requests past first token over the mean running batch, the first third of
    ``steps`` left out (the first wave)."""
    free = capacity
    running: list[list[int]] = []  # [generated, slots held]
    waiting: deque[list[int]] = deque([0, 0] for _ in range(clients))
    past = run = 0
    for step in range(steps):
        free = _schedule(running, waiting, free, prompt)
        if step >= steps // 3:
            run += len(running)
            past += len(running) + sum(1 for request in waiting if request[0] > 0)
        for request in list(running):
            request[0] += 1
            if request[0] == gen:
                running.remove(request)
                free += request[1]
                waiting.append([0, 0])  # the client sends its next request at once
    return past / run


@pytest.mark.parametrize(("prompt", "gen"), [(192, 96), (96, 96), (96, 192), (96, 384)])
def test_past_ratio_matches_simulated_scheduler(prompt: int, gen: int) -> None:
    batch = 16  # the running batch the cache holds at prompt + gen / 2 each
    simulated = _simulate(batch * (prompt + gen // 2), prompt, gen, 4 * batch, 12 * gen)
    assert simulated > 1.1  # preemption does put requests past first token out of the batch
    assert past_ratio(prompt, gen) == pytest.approx(simulated, rel=0.1)


def test_one_wave_is_the_integral_of_the_shrinking_batch() -> None:
    # K / P requests admitted; K / (P + t) run at t: mean K ln(1 + G / P) / G over G steps
    assert wave_past_ratio(1000, 1000) == pytest.approx(1.0 / 0.693147, rel=1e-5)
    assert wave_past_ratio(1000, 0) == 1.0


def test_preempted_requests_are_bounded_by_those_in_flight() -> None:
    assert preempted_requests(1000, 1000, 35, 400) == pytest.approx(0.2213 * 35, rel=1e-3)
    assert preempted_requests(1000, 1000, 35, 38) == 3.0
    assert preempted_requests(1000, 1000, 35, 35) == 0.0


def _costs(preempts: bool) -> Costs:
    return Costs(
        step_seconds=lambda batch: 0.02 + 0.0002 * batch,
        prefill_seconds_per_token=2e-5,
        single_prefill_seconds=0.03,
        compute_bound_at=lambda batch: False,
        kv_preemption=preempts,
    )


def test_preempted_wait_moves_from_ttft_to_tpot() -> None:
    plain = estimate_serving(400, 35, 1000, 1000, _costs(False))
    paged = estimate_serving(400, 35, 1000, 1000, _costs(True))
    parked_s = preempted_requests(1000, 1000, 35, 400) * 1000 / plain.aggregate_tokens_per_s
    assert paged.aggregate_tokens_per_s == plain.aggregate_tokens_per_s
    assert paged.tpot_s == pytest.approx(plain.tpot_s + parked_s / 999, rel=1e-9)
    assert paged.ttft_s == pytest.approx(plain.ttft_s - parked_s, rel=1e-9)


def test_requests_started_are_capped_by_the_engines_max_batch() -> None:
    """A preempted request goes back to the front of the waiting queue, so no new request
    starts before it runs again: running + preempted stay within max_num_seqs (here 38 for a
    KV-limited batch of 35), whatever the concurrency: 3 parked, not 0.2213 x 35 = 7.75."""
    capped = estimate_serving(400, 35, 1000, 1000, replace(_costs(True), engine_cap=38))
    plain = estimate_serving(400, 35, 1000, 1000, _costs(False))
    moved = 3.0 * 1000 / plain.aggregate_tokens_per_s
    assert capped.tpot_s == pytest.approx(plain.tpot_s + moved / 999, rel=1e-9)
    assert capped.ttft_s == pytest.approx(plain.ttft_s - moved, rel=1e-9)


def test_nothing_moves_when_every_request_runs() -> None:
    costs = _costs(True)
    assert estimate_serving(30, 35, 1000, 1000, costs) == estimate_serving(
        30, 35, 1000, 1000, replace(costs, kv_preemption=False)
    )


def test_the_split_is_continuous_in_the_number_queued() -> None:
    """Few queued, few preempted: q requests beyond a batch of 35 (at most 0.2213 x 35 = 7.75
    of them, past_ratio(1000, 1000) - 1 = 0.2213) wait q x gen / throughput in TPOT (Little's
    law) and what is left of the queue wait in TTFT; nothing moves with nothing queued."""
    extra = (1.0 / math.log(2.0) - 1.0) / 2.0 * 35  # (past_ratio - 1) x batch, G = P
    for queued in (0, 1, 2, 5, 8, 20):
        plain = estimate_serving(35 + queued, 35, 1000, 1000, _costs(False))
        paged = estimate_serving(35 + queued, 35, 1000, 1000, _costs(True))
        moved = min(queued, extra) * 1000 / plain.aggregate_tokens_per_s
        assert paged.tpot_s - plain.tpot_s == pytest.approx(moved / 999, rel=1e-3, abs=1e-12)
        assert paged.queue_wait_s == pytest.approx(max(0.0, plain.queue_wait_s - moved), abs=1e-9)


def test_a_burst_moves_its_parked_wait_within_its_queue_wait() -> None:
    # 0.2213 x 35 = 7.746 parked, 0.5 s of throughput each: 3.873 s, at most the burst's wait
    assert burst_parked_seconds((1000, 1000, 35, 400), 0.5, 100.0) == pytest.approx(3.873, rel=1e-3)
    assert burst_parked_seconds((1000, 1000, 35, 400), 0.5, 2.0) == 2.0
    assert burst_parked_seconds((1000, 1000, 35, 30), 0.5, 100.0) == 0.0
    plain = estimate_serving(400, 35, 1000, 1000, _costs(False))
    paged = estimate_serving(400, 35, 1000, 1000, _costs(True))
    request_s = 1000 / plain.aggregate_tokens_per_s
    moved = (1.0 / math.log(2.0) - 1.0) / 2.0 * 35 * request_s
    # the burst of 400 as serving_frontend reckons it: the first 35 after the wave's service,
    # the rest as slots free (the cohort's life, then one per request_s), joining the batch
    first = plain.ttft_wave_s - plain.queue_wait_s
    join = estimate_serving(35, 35, 1000, 1000, _costs(True)).ttft_s  # desynchronised
    life = first + 999 * plain.tpot_s  # the oldest cohort is never the one preempted
    burst = burst_ttft_seconds(400, 35, first, life, 1.0 / request_s, join)
    assert paged.ttft_burst_s == pytest.approx(burst - moved, rel=1e-9)
    assert paged.tpot_burst_s == pytest.approx(plain.tpot_s + moved / 999, rel=1e-9)
    assert plain.tpot_burst_s == plain.tpot_s


def _burst_parked_steps(capacity: int, prompt: int, gen: int, clients: int) -> tuple[float, float]:
    """(mean steps the first ``clients`` requests of a closed loop started at once wait past
    their first token, steps per completion later on), by the rules of ``_simulate``."""
    free, total, sent = capacity, 12 * clients, clients
    running: list[list[int]] = []  # [generated, slots held, id]
    waiting: deque[list[int]] = deque([0, 0, i] for i in range(clients))
    parked = [0] * total
    done_at: list[int] = []
    step = 0
    while len(done_at) < total:
        free = _schedule(running, waiting, free, prompt)
        for request in waiting:
            parked[request[2]] += request[0] > 0
        for request in list(running):
            request[0] += 1
            if request[0] == gen:
                running.remove(request)
                free += request[1]
                done_at.append(step)
                if sent < total:
                    waiting.append([0, 0, sent])
                    sent += 1
        step += 1
    later = (done_at[-1] - done_at[4 * clients]) / (total - 1 - 4 * clients)
    return sum(parked[:clients]) / clients, later


@pytest.mark.parametrize(("prompt", "gen"), [(192, 96), (96, 96)])
@pytest.mark.parametrize("clients", [32, 64])
def test_a_burst_parks_about_the_steady_state_not_the_first_wave(
    prompt: int, gen: int, clients: int
) -> None:
    """The burst's requests beyond its first cohort join the steady churn: their parked time is
    the steady state's (Little's law, parked requests x steps per completion), within 30 %,
    not the first wave's ratio's (half as much again or more)."""
    batch = 16
    simulated, per_request = _burst_parked_steps(batch * (prompt + gen // 2), prompt, gen, clients)
    steady = (past_ratio(prompt, gen) - 1.0) * batch * per_request
    wave = (wave_past_ratio(prompt, gen) - 1.0) * batch * per_request
    assert simulated == pytest.approx(steady, rel=0.3)
    assert abs(simulated - wave) > abs(simulated - steady)
