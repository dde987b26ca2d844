"""The grid's nodes: their labels and listing, and the verification pass that turns a
``verifying`` node (admitted on its claim) into ``admitted`` or ``rejected`` on what the grid
measured on its Ray worker (``rigwise.grid.verify``)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from rigwise.grid.db import NodeRow
from rigwise.grid.engine import ADMITTED, REJECTED, VERIFYING, Engine
from rigwise.grid.policy import Admission, MachineFacts, Policy
from rigwise.grid.verify import (
    VerificationRule,
    best_of,
    judge,
    only_speed_failed,
    timed_out,
)
from rigwise.units import GiB


def verify_pass(session: Session, engine: Engine, policy: Policy, rule: VerificationRule) -> None:
    """Start the grid's measurement on every verifying node whose Ray worker is up; settle the
    ones measured, failed or out of time. A restarted coordinator starts over (no state lost:
    the node stays verifying until a verdict is written)."""
    pending = session.scalars(select(NodeRow).where(NodeRow.state == VERIFYING)).all()
    if not pending:
        return
    alive = engine.alive_nodes()
    for node in pending:
        status, value = engine.verification(node.id)
        if status == "done":
            measured = _with_earlier(node, MachineFacts.from_dict(value))
            verified, verdict = judge(policy, MachineFacts.from_dict(node.facts), measured, rule)
            if _measure_again(node, verdict, rule):
                _start_measuring(engine, node)
                attempts = int(node.verification.get("attempts", 1)) + 1
                best = measured.to_dict()
                node.verification = {"state": "running", "attempts": attempts, "best": best}
            else:
                settle(node, measured, verified, verdict)
        elif status == "error":
            reject(node, f"the grid's benchmark failed on the node: {value}")
        elif timed_out(rule, node.joined_at):
            why = (
                "its Ray worker never connected"
                if status == "absent" and not alive.get(node.id)
                else "the grid's benchmark did not finish"
            )
            reject(node, f"{why} within {rule.timeout_s:.0f} s")
        elif status == "absent" and alive.get(node.id):
            _start_measuring(engine, node)
            node.verification = {**node.verification, "state": "running"}


def _start_measuring(engine: Engine, node: NodeRow) -> None:
    """The grid's measurement as a Ray task on the node's worker, holding what it claimed."""
    claimed = MachineFacts.from_dict(node.facts)
    engine.verify(node.id, node.resources.get("CPU", 1.0), len(claimed.gpus), claimed)


def _with_earlier(node: NodeRow, measured: MachineFacts) -> MachineFacts:
    """This measurement, with each speed the best of it and the node's earlier ones."""
    earlier = (node.verification or {}).get("best")
    return best_of(MachineFacts.from_dict(earlier), measured) if earlier else measured


def _measure_again(node: NodeRow, verdict: Admission, rule: VerificationRule) -> bool:
    """A node the grid would reject only on a speed (a load spike while it measured: the
    tour's one-machine grid was once rejected at 0.43 of its own claimed bandwidth, taken
    seconds before) is measured again, up to ``rule.attempts`` times while time is left."""
    attempts = int((node.verification or {}).get("attempts", 1))
    if attempts >= rule.attempts or timed_out(rule, node.joined_at):
        return False
    return only_speed_failed(verdict)


def reject(node: NodeRow, why: str) -> None:
    """A verifying node the grid could not measure: rejected for ``why``. Its credential can
    then only read the node's own record (see the coordinator's ``member``)."""
    node.state, node.reasons = REJECTED, [f"verification: {why}"]
    node.verification = {"state": "failed", "error": why}


def settle(
    node: NodeRow, measured: MachineFacts, verified: MachineFacts, verdict: Admission
) -> None:
    """The verdict on a verifying node, judged (``judge``) on ``measured`` (the grid's figures)."""
    node.state = ADMITTED if verdict.admitted else REJECTED
    node.reasons = verdict.reasons
    node.measured_flops = verified.measured_flops
    node.verification = {
        "state": "passed" if verdict.admitted else "failed",
        "measured": measured.to_dict(),
        "verified": verified.to_dict(),
        **verdict.to_dict(),
    }


def grid_labels(facts: MachineFacts) -> dict[str, str]:
    """The labels the grid gives a node from its facts (placement selects on them)."""
    largest_domain = max(
        (
            sum(1 for g in facts.gpus if g.nvlink_domain == gpu.nvlink_domain)
            for gpu in facts.gpus
            if gpu.nvlink_domain
        ),
        default=min(len(facts.gpus), 1),
    )
    return {
        "site": facts.site,
        "switch": facts.switch,
        "numa-nodes": str(facts.numa_nodes),
        "gpu-model": facts.gpus[0].name if facts.gpus else "none",
        "nvlink-domain-gpus": str(largest_domain),
        "gpu-memory-gib": str(int(min((g.memory_bytes for g in facts.gpus), default=0) / GiB)),
        "link-gbps": f"{facts.network_bytes_per_s * 8 / 1e9:.1f}",
        "storage": "yes" if facts.storage_path else "no",
    }


def ray_resources(facts: MachineFacts) -> dict[str, float]:
    """Custom Ray resources a node's worker advertises (``ray status`` shows them; a task can
    ask for them): its GPUs' memory in GiB, and one unit of storage for a storage node."""
    resources = {"rigwise-gpu-memory-gib": sum(g.memory_bytes for g in facts.gpus) / GiB}
    if facts.storage_path:
        resources["rigwise-storage"] = 1.0
    return {name: value for name, value in resources.items() if value > 0}


def node_dict(row: NodeRow, detail: bool = False) -> dict[str, Any]:
    verification = dict(row.verification or {})
    if not detail:  # the list keeps the verdict; the figures are in `grid node ID`
        verification = {k: v for k, v in verification.items() if k in ("state", "error")}
    return {
        "id": row.id,
        "name": row.name,
        "owner": row.owner,
        "state": row.state,
        "reasons": row.reasons,
        "resources": row.resources,
        "labels": row.labels,
        "measured_flops": row.measured_flops,
        "storage_role": row.storage_role,
        "verification": verification,
    }
