"""Pooled machines, honestly: N nodes over a network add up their memory, not their speed.

``pooled_memory_answer`` plans the same model on one node, on N nodes over the chosen network
and (optionally) on one reference machine (seed 004: does a 20-node compute-blade cluster with
160 GB in sum serve a model like one 128 GB Mac?), and reports each plan's fit and decode speed
from the planners, with the memory each pool brings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rigwise.design.planner import Estimate, Planner, rigwise_planner
from rigwise.errors import InputError
from rigwise.serialize import JsonObject


@dataclass(frozen=True)
class PoolCase(JsonObject):
    on: str
    nodes: int
    network: str | None
    memory_bytes: float | None
    fits: bool
    decode_tokens_per_s: float | None
    reason: str
    decode_tokens_per_s_interval: list[float] | None = None  # P10-P90 (plan_intervals.py)


@dataclass(frozen=True)
class PooledAnswer:
    model: str
    quant: str | None
    single: PoolCase
    pooled: PoolCase
    reference: PoolCase | None
    answer: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "quant": self.quant,
            "single": self.single.to_dict(),
            "pooled": self.pooled.to_dict(),
            "reference": self.reference.to_dict() if self.reference else None,
            "answer": self.answer,
        }


def _memory_of(on: str) -> float | None:
    try:
        from rigwise.hardware import parse_node

        cluster = parse_node(on)
    except Exception:  # the name is reported by the planner's own error
        return None
    return sum(node.memory_bytes for node in cluster.nodes)


def _case(
    planner: Planner, model: str, on: str, nodes: int, network: str | None, quant: str | None
) -> PoolCase:
    estimate: Estimate = planner(
        task="infer",
        model=model,
        on=on,
        nodes=nodes,
        network=network,
        engine=None,
        quant=quant,
        split=None,
        concurrency=1,
        tokens=None,
    )
    memory = _memory_of(on)
    return PoolCase(
        on=on,
        nodes=nodes,
        network=network if nodes > 1 else None,
        memory_bytes=memory * nodes if memory is not None else None,
        fits=estimate.fits,
        decode_tokens_per_s=estimate.decode_tokens_per_s if estimate.fits else None,
        reason=estimate.reason,
        decode_tokens_per_s_interval=estimate.decode_tokens_per_s_interval
        if estimate.fits
        else None,
    )


def _explain(single: PoolCase, pooled: PoolCase, reference: PoolCase | None) -> str:
    def speed(case: PoolCase) -> str:
        return f"{case.decode_tokens_per_s:.3g} tok/s" if case.fits else "does not fit"

    text = (
        f"One {single.on}: {speed(single)}; {pooled.nodes} of them over {pooled.network}: "
        f"{speed(pooled)}. Pooling adds memory (capacity), not speed: the layers run one node "
        "after another and each token crosses the network, so a pooled model decodes no faster "
        "than one node's share of the bandwidth allows."
    )
    if reference is not None:
        text += f" For comparison, one {reference.on}: {speed(reference)}."
    return text


def pooled_memory_answer(
    model: str,
    on: str,
    nodes: int,
    network: str,
    *,
    reference: str | None = None,
    quant: str | None = None,
    planner: Planner | None = None,
) -> PooledAnswer:
    from rigwise.hardware.nodes import check_cluster_size

    check_cluster_size(nodes, 0)  # a pool of 0 or -3 nodes is bad input, not an answer
    if nodes == 1:  # the answer compared one machine with itself 'over None'
        raise InputError(
            "--nodes 1 is one machine, not a pool: the question compares a pool of 2 or more "
            "with one.",
            hint=f"Use --nodes 2 or more, or `rigwise infer {model} --on '{on}'` for one machine.",
        )
    _check_names(model, on, nodes, network, reference, quant)
    plan = planner or rigwise_planner()
    single = _case(plan, model, on, 1, None, quant)
    pooled = _case(plan, model, on, nodes, network, quant)
    ref = _case(plan, model, reference, 1, None, quant) if reference else None
    return PooledAnswer(model, quant, single, pooled, ref, _explain(single, pooled, ref))


def _check_names(
    model: str, on: str, nodes: int, network: str, reference: str | None, quant: str | None
) -> None:
    """A name the user typed wrong is bad input naming it: the planner turns every error of
    a case into a 'does not fit' reason (right for the recommender's candidates), so
    '--network zzz' answered '4 of them over zzz: does not fit'."""
    from rigwise.api.infer_stages import cluster_of, model_of
    from rigwise.models import quant_format

    model_of(model)
    cluster_of(on, nodes, network, None)
    if reference:
        cluster_of(reference, 1, None, None)
    if quant:
        quant_format(quant)
