"""Time per output token of a running batch whose members' prompts are chunked into its steps.

vLLM V1's scheduler (vllm/v1/core/sched/scheduler.py ``Scheduler.schedule``) schedules the
running requests first, one token each out of the step's budget ``max_num_batched_tokens``,
then gives what is left to the waiting or partially prefilled requests, in chunks (chunked
prefill, stall-free batching: Agrawal et al. 2024, Sarathi-Serve, OSDI). A running request so
gets one token per step, and a step that carries a prompt chunk lasts as long as its tokens
take. Over a request's life (one cycle of its batch: ``B x own prefill + gen x step``) the
prompts chunked into the steps it decodes in set its time per output token.

A wave of B requests arriving together into an idle engine, and nothing behind it: request k
waits for the k - 1 prompts ahead (its TTFT, ``serving.wave_ttft_seconds``) and decodes through
the B - k behind, so the cycle less its TTFT, spread over its gen - 1 tokens, is its TPOT
(``wave_tpot_seconds``). With requests queued beyond the batch a slot frees as each request
ends (the scheduler admits a waiting request as soon as a sequence slot and the KV blocks of
its prompt are free, not when the whole batch has ended), and with equal lengths the
admissions rotate: request k's successor is admitted when request k ends, so request k decodes
through the prompts of the B - k behind it and of the k - 1 successors admitted before it ends,
B - 1 prompts in all, every request alike. Its first token comes one step after its own prompt
is prefilled, and the cycle less that, over gen - 1 tokens, is its TPOT (``wave_tpot_seconds``
with that first token, as ``serving.estimate_serving`` takes it when requests queue):
step + (B - 1) x own prefill / (gen - 1). That is the fluid count: (B - 1) P / T of its decode
steps carry a full chunk, each lasting the budget's T prompt tokens, their attention over the
prefix included (``inference_batched.prefill_seconds_per_token_batched`` prices a prompt token
at the mean context P / 2, so P of them the whole causal attention, quadratic in P). A
step-level simulation of the rules above (tests/estimate/test_serving_tpot.py) agrees to a few
per cent; the same simulation with exactly B clients (none queued, each sending its next
request the moment one ends) rotates the same way, which the wave formula, kept there with
the wave TTFT it pairs with, does not follow.
"""

from __future__ import annotations

from typing import Any

from rigwise.estimate.elementwise import as_float, maximum, minimum


def wave_tpot_seconds(
    cycle_s: Any, ttft_s: Any, step_s: Any, gen: int, chunk_step_s: Any = None
) -> Any:
    """Time per output token after the first: a request lives one cycle of its batch (closed
    loop), so what the cycle leaves after its first token is spread over its other tokens
    (the prefills of the batch members behind it interleave with its decode); never less
    than a decode step, and never more than ``chunk_step_s``, a step that carries a full chunk
    of the step's token budget beside the running decodes: the scheduler gives every running
    request its token each step before any prompt chunk, so prompts beyond what its decode
    steps carry wait in the queue (time to first token), not between its tokens."""
    if gen <= 1:
        return step_s
    tpot = maximum(as_float(step_s), (cycle_s - ttft_s) / (gen - 1))
    return tpot if chunk_step_s is None else minimum(tpot, chunk_step_s)
