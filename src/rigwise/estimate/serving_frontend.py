"""The engine's API-server front end as a serving bottleneck, and bursts of requests.

An OpenAI-compatible server streams every output token through one Python process: an HTTP/SSE
chunk, incremental detokenisation, output processing (vLLM V1 runs the engine core in another
process, vllm-project/vllm RFC #12705, so this work no longer shares the GIL with the model, but
it is still one CPU). Its cost per streamed token (``engine_overheads.csv`` ``frontend_token_us``,
fitted on vLLM PR #12287's front-end-bound benchmark) caps one server at ``1 / frontend_token_s``
output tokens/s whatever the GPU. A small model on a large GPU reaches that cap long before its
running batch fills: requests are admitted only as fast as the front end serves them, so the
engine's running batch settles where its own rate meets the cap (``frontend_batch``), each user
sees ``batch / cap`` seconds per token, and a burst of requests waits its turn at that rate
(``burst_ttft_seconds``). A replica's cycle (the time one request of a batch B takes, prefills
of the batch included) is stretched to at least ``B x gen x frontend_token_s``
(``frontend_cycle_seconds``): zero leaves every engine without the factor unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rigwise.estimate.elementwise import as_float, maximum


def frontend_cycle_seconds(cycle_s: Any, batch: Any, gen: int, frontend_token_s: float) -> Any:
    """One request's cycle at running batch ``batch``: the engine's ``cycle_s``, or the time the
    front end takes to stream the batch's ``batch x gen`` tokens if longer. Floats or arrays."""
    return maximum(cycle_s, as_float(batch) * gen * frontend_token_s)


def frontend_batch(
    batch: int, gen: int, engine_cycle_s: Callable[[int], float], frontend_token_s: float
) -> int:
    """The running batch a front-end-bound replica settles at: the smallest batch (at most
    ``batch``, what the slots allow) whose engine rate ``B x gen / engine_cycle_s(B)`` reaches
    the front end's ``1 / frontend_token_s``; ``batch`` itself when the engine is the slower
    (or no factor). Requests beyond it wait in the front end: admitting them would not raise
    the rate, only lengthen every step. Bisection: the engine's rate grows with the batch."""
    if frontend_token_s <= 0.0 or batch <= 1:
        return batch

    def reaches(b: int) -> bool:
        return b * gen * frontend_token_s >= engine_cycle_s(b)

    if not reaches(batch):
        return batch
    low, high = 1, batch  # reaches(high) holds
    while low < high:
        middle = (low + high) // 2
        if reaches(middle):
            high = middle
        else:
            low = middle + 1
    return high


def burst_ttft_seconds(
    requests: int, batch: int, first_s: float, life_s: float, rate_per_s: float, join_s: float
) -> float:
    """Mean time to first token of ``requests`` arriving at once, one each (a benchmark at
    request rate inf with as many prompts as clients): ``batch`` are admitted together and get
    their first token after ``first_s`` (the wave); the rest wait in arrival order for a slot.
    The first slot frees when the first cohort has lived ``life_s`` (its TTFT and decode), then
    one every ``1 / rate_per_s`` (the replica's completion rate), so the j-th of the rest starts
    at life_s + (j - 1) / rate and needs ``join_s`` more (its prefill beside the running batch).
    All requests fit at once: the wave."""
    if requests <= batch or rate_per_s <= 0.0:
        return first_s
    rest = requests - batch
    later = life_s + (rest - 1) / (2.0 * rate_per_s) + join_s
    return (batch * first_s + rest * later) / requests
