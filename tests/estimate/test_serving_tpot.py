"""Time per output token with prompts chunked into the decode steps (estimate/serving_tpot):
the closed form against a step-level simulation of vLLM V1's documented scheduling rules."""

from __future__ import annotations

from collections import deque

import pytest

from rigwise.estimate.serving import Costs, estimate_serving
from rigwise.estimate.serving_tpot import wave_tpot_seconds

STEP_S = 0.03  # a decode step, whatever the batch (stand-in)
TOKEN_S = 1.0 / 12000  # seconds per prompt token of a chunk (stand-in)


def _simulated_tpot(prompt: int, gen: int, slots: int, clients: int, budget: int) -> float:
    """Mean TPOT of the second half of the requests a closed loop of ``clients`` completes
    under vLLM V1's rules (vllm/v1/core/sched/scheduler.py ``Scheduler.schedule``): running
    requests first, one decode token each out of the step's ``budget``; what is left goes to
    prompts first come first served (the partially prefilled first, then waiting requests,
    admitted while fewer than ``slots`` run); a request's first token ends the step that
    prefills its last prompt token; a step lasts STEP_S + TOKEN_S x its prompt tokens; a
    request that ends goes back to the queue's tail (its client sends the next at once)."""
    waiting, running = deque(range(clients)), []  # running: [prefilled, generated, first_t]
    now, tpots = 0.0, []
    for _ in range(max(4000, 30 * gen)):
        while waiting and len(running) < slots:
            waiting.popleft()
            running.append([0, 0, 0.0])
        left = budget - sum(1 for r in running if r[0] == prompt)
        chunk, firsts = 0, []
        for r in running:
            if r[0] < prompt and left > 0:
                take = min(left, prompt - r[0])
                r[0], left, chunk = r[0] + take, left - take, chunk + take
                firsts += [r] if r[0] == prompt else []
        now += STEP_S + TOKEN_S * chunk
        for r in running:
            if r[0] == prompt and (r[1] > 0 or any(r is f for f in firsts)):
                r[1], r[2] = r[1] + 1, now if r[1] == 0 else r[2]
        for r in [r for r in running if r[1] >= gen]:
            running.remove(r)
            tpots.append((now - r[2]) / (gen - 1))
            waiting.append(0)
    tail = tpots[len(tpots) // 2 :]
    return sum(tail) / len(tail)


def _costs(prompt: int, budget: int) -> Costs:
    return Costs(
        step_seconds=lambda batch: STEP_S,
        prefill_seconds_per_token=TOKEN_S,
        single_prefill_seconds=prompt * TOKEN_S,
        compute_bound_at=lambda batch: False,
        chunk_tokens=budget,
    )


SHAPES = [  # prompt, gen, running batch, step budget
    (32000, 100, 8, 8192),  # a 32K prompt in four chunks, few running (KV-bound)
    (3000, 50, 6, 2048),  # a prompt over two steps
    (500, 200, 64, 2048),  # short prompts, four to a step
]


@pytest.mark.parametrize(("prompt", "gen", "batch", "budget"), SHAPES)
def test_queued_tpot_is_a_step_plus_the_other_prompts_over_the_decode(
    prompt: int, gen: int, batch: int, budget: int
) -> None:
    """Requests queued beyond the batch: each decodes through the other B - 1 prompts of its
    cycle, so TPOT = step + (B - 1) P x prefill per token / (gen - 1) (serving_tpot)."""
    result = estimate_serving(3 * batch, batch, prompt, gen, _costs(prompt, budget))
    expected = STEP_S + (batch - 1) * prompt * TOKEN_S / (gen - 1)
    assert result.tpot_s == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize(("prompt", "gen", "batch", "budget"), SHAPES)
def test_queued_tpot_matches_the_step_level_simulation(
    prompt: int, gen: int, batch: int, budget: int
) -> None:
    """The closed form sits within 4 % of the simulated rules (the fluid model ignores the
    decode tokens' share of a step's budget and a chunk's rounding); the wave's formula, one
    burst with nothing behind it, is more than 10 % below it on these prefill-heavy shapes."""
    simulated = _simulated_tpot(prompt, gen, batch, 3 * batch, budget)
    result = estimate_serving(3 * batch, batch, prompt, gen, _costs(prompt, budget))
    assert result.tpot_s == pytest.approx(simulated, rel=0.04)
    wave = estimate_serving(batch, batch, prompt, gen, _costs(prompt, budget))
    assert wave.tpot_s < 0.9 * simulated


def test_tpot_is_never_below_a_decode_step() -> None:
    assert wave_tpot_seconds(1.0, 0.9, STEP_S, 100) == STEP_S  # the cycle left: 1 ms a token
    assert wave_tpot_seconds(9.0, 0.9, STEP_S, 1) == STEP_S  # one token: no TPOT of its own
    assert wave_tpot_seconds(9.0, 0.9, STEP_S, 101) == pytest.approx(0.081)


@pytest.mark.parametrize(
    ("prompt", "gen", "batch", "budget"), [(3000, 3, 6, 2048), (8000, 2, 5, 2048)]
)
def test_tpot_is_at_most_a_step_with_a_full_chunk(
    prompt: int, gen: int, batch: int, budget: int
) -> None:
    """When the other prompts need more chunk steps than a request decodes ((B - 1) P / T >
    gen - 1), each of its steps carries one full chunk at most: the scheduler serves every
    running decode first, so the prompts left wait in the queue (TTFT), not between its tokens.
    TPOT = step + T x prefill per token, as the simulated rules give (within 4 %)."""
    result = estimate_serving(3 * batch, batch, prompt, gen, _costs(prompt, budget))
    assert result.tpot_s == pytest.approx(STEP_S + budget * TOKEN_S, rel=1e-9)
    simulated = _simulated_tpot(prompt, gen, batch, 3 * batch, budget)
    assert result.tpot_s == pytest.approx(simulated, rel=0.04)
