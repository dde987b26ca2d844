"""The grid's own check of a joining machine, so admission rests on what the grid measured.

The agent's figures are a claim: it passes the policy on them, gets a credential and starts its
Ray worker, and the node is ``verifying``. The coordinator then runs ``measure_node`` as a Ray
task on that worker (pinned by its node-id label, holding every CPU and GPU the worker offers):
the same probe and benchmark the agent ran, plus a download of a payload from the coordinator
through Ray's object store for the link. ``judge`` decides on those figures:

- the policy is evaluated on the verified facts (the grid's figures; inventory is the smaller of
  claimed and seen), so a machine that meets it only on paper is rejected;
- every claim is compared with the measurement: speed (FLOP/s, memory bandwidth) measured below
  ``min_fraction_of_claim`` of the claim, or fewer cores, GPUs or less memory than claimed, is a
  failed check, because the claim is what the owner would otherwise be credited for.

What this does not stop: a node running modified rigwise or Ray code can fake the measurement
as well (it runs there). BOINC's answer to that, redundant computing with result comparison
(Anderson 2004, "BOINC: A System for Public-Resource Computing and Storage", GRID '04), is not
implemented here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rigwise.grid.policy import Admission, Check, GpuFacts, MachineFacts, Policy, evaluate
from rigwise.units import format_bytes

# inventory may be reported in GiB by one tool and GB by another (7% apart): allowed slack
INVENTORY_SLACK = 0.9


@dataclass(frozen=True)
class VerificationRule:
    min_fraction_of_claim: float  # measured speed / claimed speed below this fails
    timeout_s: float  # from the join to a verdict (the Ray worker must connect within it)
    payload_bytes: int  # sent from the coordinator to the node to measure the link
    attempts: int = 1  # measurements at most while only a speed falls short (the best is judged)

    @classmethod
    def from_policy_data(cls, data: dict[str, Any]) -> VerificationRule:
        section = data["verification"]
        return cls(
            float(section["min_fraction_of_claim"]),
            float(section["timeout_s"]),
            int(section["payload_bytes"]),
            max(1, int(section.get("attempts", 1))),
        )


# Checks a transient load on the node can fail (a speed), as opposed to an inventory it has or not.
SPEED_CHECKS = frozenset(
    {"claimed_flops", "claimed_memory_bandwidth", "measured_flops", "memory_bandwidth", "network"}
)


def best_of(first: MachineFacts, second: MachineFacts) -> MachineFacts:
    """Two measurements of one node: the second, with each speed the faster of the two (a
    machine is as fast as it was once measured; a load spike only slows it)."""
    return replace(
        second,
        measured_flops=max(first.measured_flops, second.measured_flops),
        measured_memory_bandwidth_bytes_per_s=max(
            first.measured_memory_bandwidth_bytes_per_s,
            second.measured_memory_bandwidth_bytes_per_s,
        ),
        network_bytes_per_s=max(first.network_bytes_per_s, second.network_bytes_per_s),
    )


def only_speed_failed(admission: Admission) -> bool:
    """Rejected, and only on speeds (worth measuring again), not on what the node has."""
    failed = [check.requirement for check in admission.checks if not check.passed]
    return bool(failed) and all(name in SPEED_CHECKS for name in failed)


def measure_node(
    disk_path: str, site: str, switch: str, fetch_payload: Callable[[], int]
) -> dict[str, Any]:
    """The machine this runs on, measured (runs inside the grid's Ray task on the node).
    ``fetch_payload`` pulls the coordinator's payload and returns its size in bytes."""
    from rigwise.grid.measure import ProbeFacts

    disk = disk_path if Path(disk_path).is_dir() else "."
    facts = ProbeFacts(site, switch, disk=disk).facts()
    started = time.perf_counter()
    received = fetch_payload()
    link = received / max(time.perf_counter() - started, 1e-9)
    return replace(facts, network_bytes_per_s=link).to_dict()


def _seen_gpus(claimed: tuple[GpuFacts, ...], seen: tuple[GpuFacts, ...]) -> tuple[GpuFacts, ...]:
    """Claimed GPUs the grid saw, each with the smaller of the two memory figures."""
    return tuple(
        replace(mine, memory_bytes=min(mine.memory_bytes, found.memory_bytes))
        for mine, found in zip(claimed, seen, strict=False)
    )


def verified_facts(claimed: MachineFacts, measured: MachineFacts) -> MachineFacts:
    """The claim with every figure the grid measured put in its place."""
    return replace(
        claimed,
        cpu_cores=min(claimed.cpu_cores, measured.cpu_cores),
        memory_bytes=min(claimed.memory_bytes, measured.memory_bytes),
        gpus=_seen_gpus(claimed.gpus, measured.gpus),
        disk_free_bytes=measured.disk_free_bytes,
        network_bytes_per_s=measured.network_bytes_per_s,
        measured_flops=measured.measured_flops,
        measured_memory_bandwidth_bytes_per_s=measured.measured_memory_bandwidth_bytes_per_s,
    )


def _claim(name: str, claimed: float, measured: float, floor: float, shown: str) -> Check:
    passed = measured >= floor * claimed
    verdict = "ok" if passed else f"below {floor:.0%} of the claim"
    message = f"verification: {name}: {shown} ({verdict})"
    return Check(f"claimed_{name}", float(claimed), float(measured), passed, message)


def _speed(
    name: str, claimed: float, measured: float, floor: float, unit: str, scale: float
) -> Check:
    shown = f"claimed {claimed / scale:.3g} {unit}, the grid measured {measured / scale:.3g} {unit}"
    return _claim(name, claimed, measured, floor, shown)


def _inventory(name: str, claimed: float, measured: float, as_bytes: bool = False) -> Check:
    show = format_bytes if as_bytes else (lambda value: f"{value:g}")
    shown = f"claimed {show(claimed)}, the grid saw {show(measured)}"
    return _claim(name, claimed, measured, INVENTORY_SLACK, shown)


def claim_checks(
    claimed: MachineFacts, measured: MachineFacts, rule: VerificationRule
) -> tuple[Check, ...]:
    """Each claim against what the grid measured."""
    floor = rule.min_fraction_of_claim
    claimed_gpu_memory = min((g.memory_bytes for g in claimed.gpus), default=0.0)
    seen_gpu_memory = min((g.memory_bytes for g in measured.gpus), default=0.0)
    return (
        _speed("flops", claimed.measured_flops, measured.measured_flops, floor, "TFLOP/s", 1e12),
        _speed(
            "memory_bandwidth",
            claimed.measured_memory_bandwidth_bytes_per_s,
            measured.measured_memory_bandwidth_bytes_per_s,
            floor,
            "GB/s",
            1e9,
        ),
        _inventory("cpu_cores", claimed.cpu_cores, measured.cpu_cores),
        _inventory("memory", claimed.memory_bytes, measured.memory_bytes, as_bytes=True),
        _inventory("gpus", len(claimed.gpus), len(measured.gpus)),
        _inventory("gpu_memory", claimed_gpu_memory, seen_gpu_memory, as_bytes=True),
    )


def judge(
    policy: Policy, claimed: MachineFacts, measured: MachineFacts, rule: VerificationRule
) -> tuple[MachineFacts, Admission]:
    """(the verified facts, the verdict): the policy on the grid's figures, plus every claim."""
    verified = verified_facts(claimed, measured)
    on_policy = evaluate(policy, verified)
    claims = claim_checks(claimed, measured, rule)
    admitted = on_policy.admitted and all(check.passed for check in claims)
    return verified, Admission(admitted, on_policy.checks + claims)


def timed_out(rule: VerificationRule, joined_at: float, now: float | None = None) -> bool:
    return (now if now is not None else time.time()) - joined_at > rule.timeout_s
