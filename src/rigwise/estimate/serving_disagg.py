"""Disaggregated serving: prefill workers and decode workers, the KV cache handed over between.

Prefill and decode run on separate worker pools (DistServe, Zhong et al. 2024, OSDI; Splitwise,
Patel et al. 2024, ISCA; NVIDIA Dynamo, SGLang PD disaggregation), each with its own layout.
A prefill worker processes prompts back to back, compute-bound, at the batched prefill cost;
the prompt's KV cache then moves to a decode worker over the link between them (each of the
min(tp_prefill, tp_decode) device pairs moves its shard at once, as with one NIC per GPU on DGX
class nodes); decode workers run steps of their running batch with no prefill mixed in, so the
time per output token is one decode step. The system serves the slower pool's request rate;
with N requests in flight, Little's law gives the queueing wait as in ``serving``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from rigwise.errors import InputError
from rigwise.estimate import comms
from rigwise.estimate.inference import Context, Phase
from rigwise.estimate.inference_memory import MemoryBreakdown
from rigwise.estimate.inference_stages import Stage
from rigwise.estimate.serving import (
    ServingEstimate,
    engine_max_batch,
    max_concurrency,
    replica_costs,
    resident_kv_tokens,
)
from rigwise.hardware import Link
from rigwise.plans import DOES_NOT_FIT

ROLE_KEYS = ("tp", "pp", "ep", "attention_dp", "workers", "max_batch")
_MAX_ROLE_VALUE = 100_000


@dataclass(frozen=True)
class Role:
    """One pool's layout: ``workers`` copies of tp x pp (with ep / attention_dp inside tp)."""

    tp: int = 1
    pp: int = 1
    ep: int = 1
    attention_dp: int = 1
    workers: int = 1
    max_batch: int | None = None

    @property
    def gpus(self) -> int:
        return self.workers * self.tp * self.pp


def parse_roles(disagg: Mapping[str, Mapping[str, int]]) -> tuple[Role, Role]:
    """The prefill and decode roles of a ``disagg`` option; bad keys name themselves."""
    unknown = sorted(set(disagg) - {"prefill", "decode"})
    if unknown or set(disagg) != {"prefill", "decode"}:
        raise InputError(
            f"--disagg needs exactly the keys prefill and decode (got {sorted(disagg)}).",
            hint='Use {"prefill": {"tp": 8}, "decode": {"tp": 8, "workers": 2}}.',
        )
    roles = []
    for name in ("prefill", "decode"):
        given = dict(disagg[name])
        bad = sorted(set(given) - set(ROLE_KEYS))
        if bad:
            raise InputError(
                f"--disagg {name} has unknown key(s) {', '.join(bad)}.",
                hint=f"Use: {', '.join(ROLE_KEYS)}.",
            )
        for key, value in given.items():
            if not isinstance(value, int) or not 1 <= value <= _MAX_ROLE_VALUE:
                raise InputError(
                    f"--disagg {name}.{key}={value!r} must be a whole number "
                    f"from 1 to {_MAX_ROLE_VALUE:,}."
                )
        roles.append(Role(**given))
    return roles[0], roles[1]


@dataclass(frozen=True)
class Pool:
    """A planned pool: its role, the stages of one worker, and the free memory of a worker."""

    role: Role
    stages: tuple[Stage, ...]
    free: MemoryBreakdown  # one worker's memory with no KV cache


def kv_transfer_seconds(kv_bytes: float, link: Link | None, lanes: int) -> float:
    """One request's prompt KV cache over ``lanes`` parallel device pairs of ``link``."""
    if link is None or kv_bytes <= 0:
        return 0.0
    return comms.p2p(kv_bytes / max(1, lanes), link).seconds


def serve_disagg(
    ctx: Context,
    pools: tuple[Pool, Pool],
    network: Link | None,
    link: Link | None,
    request: tuple[int | str, int, int, int],
    prefill: Phase,
) -> ServingEstimate:
    """Figures of a disaggregated deployment; ``prefill`` is one prompt on a prefill worker."""
    concurrency, prompt, gen, context = request
    pre, dec = pools
    per_token = replica_costs(
        ctx, pre.stages, network, prompt, 1, prefill
    ).prefill_seconds_per_token
    prefill_rate = pre.role.workers / max(prompt * per_token, 1e-12)  # requests / s
    most = decode_capacity(ctx, dec, resident_kv_tokens(ctx.overheads, prompt, gen, context))
    gpus = pre.role.gpus + dec.role.gpus
    if most < 1:
        inf = float("inf")
        return ServingEstimate(
            int(concurrency) if concurrency != "max" else 0, 0, 0, 0, 0.0, 0.0, 0.0, inf, inf,
            inf, inf, "memory", dec.role.workers, gpus,
            reason="A decode worker has no memory left for one request's KV cache.",
            mode="disaggregated",
        )  # fmt: skip
    wanted = most * dec.role.workers if concurrency == "max" else int(concurrency)
    batch = max(1, min(-(-wanted // dec.role.workers), most))
    step = replica_costs(ctx, dec.stages, network, prompt, gen, prefill).step_seconds(batch)
    decode_rate = dec.role.workers * batch / (gen * step)
    rate = min(prefill_rate, decode_rate)
    kv = ctx.spec.kv_cache_bytes(prompt, ctx.kv_dtype)
    transfer = kv_transfer_seconds(kv, link, min(pre.role.tp, dec.role.tp))
    ttft_service = prefill.seconds + transfer + step
    in_system = wanted / rate
    service = ttft_service + (gen - 1) * step
    wait = max(0.0, in_system - service) if wanted > dec.role.workers * batch or (
        prefill_rate < decode_rate
    ) else 0.0  # fmt: skip
    queued = max(0, wanted - dec.role.workers * batch)
    bound = "prefill workers" if prefill_rate < decode_rate else "decode workers"
    return ServingEstimate(
        concurrency=wanted,
        running_batch=batch,
        queued=queued,
        max_concurrency=most,
        aggregate_tokens_per_s=rate * gen,
        per_user_tokens_per_s=1.0 / step,
        tokens_per_s_per_gpu=rate * gen / gpus,
        ttft_s=wait + ttft_service,
        tpot_s=step,
        queue_wait_s=wait,
        step_seconds=step,
        bound=bound,
        replicas=dec.role.workers,
        gpus=gpus,
        reason=f"{pre.role.workers} prefill and {dec.role.workers} decode workers; "
        f"the {bound} set the rate.",
        kv_transfer_s=transfer,
        mode="disaggregated",
    )


def decode_capacity(ctx: Context, pool: Pool, request_tokens: int) -> int:
    """Requests of ``request_tokens`` one worker of ``pool`` runs at once."""
    cap = pool.role.max_batch or engine_max_batch(ctx, pool.stages)
    return max_concurrency(ctx.spec, pool.stages, pool.free, request_tokens, ctx.kv_dtype, cap)


@dataclass(frozen=True)
class DisaggPlan:
    serving: ServingEstimate | None
    memory: MemoryBreakdown  # one decode worker with its running batch (or what failed)
    prefill: Phase | None
    reason: str


def plan_disagg(
    ctx: Context,
    roles: tuple[Role, Role],
    stages_for: Callable[[Role], tuple[Stage, ...]],
    memory_for: Callable[[tuple[Stage, ...], float], MemoryBreakdown],
    phase_for: Callable[[tuple[Stage, ...]], Phase],
    links: tuple[Link | None, Link | None],
    request: tuple[int | str, int, int, int],
) -> DisaggPlan:
    """Plan both pools; ``links`` is (cluster network, link between the pools)."""
    network, between = links
    prompt, context = request[1], request[3]
    pools = []
    for role, tokens in zip(roles, (prompt, context), strict=True):
        stages = stages_for(role)
        one = memory_for(stages, ctx.spec.kv_cache_bytes(tokens, ctx.kv_dtype))
        if one.verdict == DOES_NOT_FIT:
            return DisaggPlan(None, one, None, one.reason)
        pools.append(Pool(role, stages, memory_for(stages, 0.0)))
    pre, dec = pools
    prefill = phase_for(pre.stages)
    serving = serve_disagg(ctx, (pre, dec), network, between, request, prefill)
    kv = ctx.spec.kv_cache_bytes(context, ctx.kv_dtype) * max(1, serving.running_batch)
    return DisaggPlan(serving, memory_for(dec.stages, kv), prefill, "")
