"""serving_preemption against a discrete-event simulation of vLLM V1's documented scheduler
rules (vllm/v1/core/sched/scheduler.py Scheduler.schedule): running requests first, each taking
the KV slot of its next token and preempting the newest running request (recompute, back to the
front of the waiting queue) when none is free; waiting requests admitted first come, first served
while their whole context fits, only in a step that preempted none. One token a slot (a block of
one), prefill inside one step, a closed loop of equal requests."""

from __future__ import annotations

from collections import deque
from dataclasses import replace

import pytest

from rigwise.estimate.serving import Costs, estimate_serving
from rigwise.estimate.serving_preemption import past_ratio, preempted_requests, wave_past_ratio


def _simulate(capacity: int, prompt: int, gen: int, clients: int, steps: int) -> float:
    """Mean requests past first token over the mean running batch, the first third of
    ``steps`` left out (the first wave)."""
    free = capacity
    running: list[list[int]] = []  # [generated, slots held]
    waiting: deque[list[int]] = deque([0, 0] for _ in range(clients))
    past = run = 0
    for step in range(steps):
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


def test_nothing_moves_when_every_request_runs() -> None:
    costs = _costs(True)
    assert estimate_serving(30, 35, 1000, 1000, costs) == estimate_serving(
        30, 35, 1000, 1000, replace(costs, kv_preemption=False)
    )
