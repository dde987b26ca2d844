"""Disaggregated prefill/decode pools of ``plan_inference`` (``--disagg``) on one cluster.

The pools' layouts are checked against the engine rules here; the estimating is in
``rigwise.estimate.serving_disagg``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from rigwise.api.infer_memory import memory_of, with_host
from rigwise.api.infer_stages import overheads
from rigwise.errors import InputError
from rigwise.estimate.inference import Context, prefill_phase
from rigwise.estimate.inference_stages import Stage
from rigwise.estimate.serving_layout import (
    ReplicaLayout,
    check_expert_parallel,
    check_rules,
    replica_stages,
)
from rigwise.hardware import Cluster
from rigwise.plans import DOES_NOT_FIT, DisaggLayout, InferencePlan

if TYPE_CHECKING:
    from rigwise.api.infer_options import InferOptions
    from rigwise.estimate.serving_disagg import Role


# infer options that set one layout, and the key of a --disagg pool that sets it instead
_POOL_KEY = {"tp": "tp", "pp": "pp", "dp": "workers", "ep": "ep", "attention_dp": "attention_dp",
             "max_batch": "max_batch"}  # fmt: skip


def check_pool_options(opts: InferOptions) -> None:
    """--disagg lays out each pool itself: a --tp (--dp ...) beside it was ignored (--tp) or
    refused as if it were the whole layout (--dp 2: 'replicas of tp 8 need 16 devices')."""
    for name, key in _POOL_KEY.items():
        if getattr(opts, name) not in (None, 1):
            flag = "--" + name.replace("_", "-")
            raise InputError(
                f"{flag} {getattr(opts, name)} cannot be combined with --disagg: each pool has "
                "its own layout.",
                hint=f'Give it inside the pools, e.g. {{"prefill": {{"{key}": 2}}, '
                f'"decode": {{"{key}": 2}}}}.',
            )


def plan_disagg_pools(
    opts: InferOptions, cluster: Cluster, ctx: Context, plan: InferencePlan
) -> InferencePlan:
    """Disaggregated prefill/decode pools (estimate.serving_disagg) on the same cluster."""
    from rigwise.estimate.serving_disagg import parse_roles, plan_disagg

    roles = parse_roles(opts.disagg or {})
    for name, role in zip(("prefill", "decode"), roles, strict=True):
        check_expert_parallel(ctx.spec, role.ep, f"--disagg {name}.ep", f"{name}.tp", role.gpus)
    total = cluster.accelerator_count
    if roles[0].gpus + roles[1].gpus > total:
        raise InputError(
            f"--disagg needs {roles[0].gpus} prefill + {roles[1].gpus} decode devices; "
            f"{total} given.",
            hint="Use fewer workers or smaller tp, or add devices (--nodes).",
        )

    def stages_for(role: Role) -> tuple[Stage, ...]:
        layout = ReplicaLayout(role.tp, role.pp, role.workers, role.ep, role.attention_dp)
        stages = with_host(
            replica_stages(
                cluster, "tensor", layout, lambda a: overheads(ctx.engine, a), ctx.spec.num_layers
            ),
            opts.host,
        )
        broken = check_rules(ctx.engine, ctx.spec, stages, ctx.quant)
        if broken is not None:
            raise _RuleBroken(broken.rule, broken.reason)
        return stages

    per_node = cluster.nodes[0].count
    between = cluster.network if roles[0].gpus >= per_node and len(cluster.nodes) > 1 else (
        cluster.nodes[0].intra_link
    )  # fmt: skip
    try:
        found = plan_disagg(
            ctx,
            roles,
            stages_for,
            lambda stages, kv: memory_of(ctx.spec, stages, ctx, kv, ctx.engine),
            lambda stages: prefill_phase(ctx, stages, cluster.network, opts.prompt),
            (cluster.network, between),
            (opts.concurrency, opts.prompt, opts.gen, plan.workload.context),
        )
    except _RuleBroken as exc:
        return replace(
            plan, memory=memory_of(ctx.spec, (), ctx, 0.0, ctx.engine), verdict=DOES_NOT_FIT,
            reason=exc.args[1], broken_rule=exc.args[0],
        )  # fmt: skip
    layout = replace(plan.layout, disagg=DisaggLayout(prefill=roles[0], decode=roles[1]))
    verdict = found.memory.verdict if found.serving is not None else DOES_NOT_FIT
    return replace(
        plan, layout=layout, memory=found.memory, verdict=verdict, reason=found.reason,
        prefill=found.prefill, serving=found.serving,
    )  # fmt: skip


class _RuleBroken(Exception):
    """An engine rule broken by one pool's layout (a result, carried out of the callback)."""
