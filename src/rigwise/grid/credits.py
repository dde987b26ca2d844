"""Credit for measured work, normalised like BOINC's Cobblestone.

BOINC defines one Cobblestone as 1/200 day of CPU time on a reference computer doing 1 GFLOPS
(https://boinc.berkeley.edu/wiki/Computation_credit), i.e. credit = days x 200 x FLOPS / 1e9.
rigwise uses the same rule with the node's *verified* throughput (the verification benchmark
run at join), so a slow node earning for an hour is not paid like a fast one. The constants
live in ``grid_policy_default.yaml`` (section ``credit``), not here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rigwise.catalog.loader import read_yaml
from rigwise.errors import InputError
from rigwise.serialize import JsonObject

SECONDS_PER_DAY = 86400.0


@dataclass(frozen=True)
class CreditRule:
    reference_flops: float
    credits_per_reference_day: float
    job_cost_factor: float
    inference_credits_per_1k_tokens: float
    min_balance_to_submit: float


@dataclass(frozen=True)
class CreditBreakdown(JsonObject):
    """Credit for one node's share of one job, with the numbers it came from."""

    seconds: float
    measured_flops: float
    normalised_speed: float  # measured / reference FLOP/s
    reference_days: float  # seconds / 86400 x normalised speed
    credits: float


def load_credit_rule(policy: dict[str, Any] | None = None) -> CreditRule:
    data = policy if policy is not None else read_yaml("grid_policy_default.yaml")
    credit, spend = data.get("credit", {}), data.get("spend", {})
    try:
        return CreditRule(
            reference_flops=float(credit["reference_flops"]),
            credits_per_reference_day=float(credit["credits_per_reference_day"]),
            job_cost_factor=float(spend["job_cost_factor"]),
            inference_credits_per_1k_tokens=float(spend["inference_credits_per_1k_tokens"]),
            min_balance_to_submit=float(spend["min_balance_to_submit"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(
            f"Credit settings are incomplete: {exc}.",
            hint="Copy the credit and spend sections of grid_policy_default.yaml.",
        ) from exc


def credit_for_work(rule: CreditRule, seconds: float, measured_flops: float) -> CreditBreakdown:
    """Credit = seconds / 86400 x (measured / reference FLOP/s) x credits per reference day."""
    if seconds < 0 or measured_flops < 0:
        raise InputError(
            f"Work must be non-negative (seconds={seconds}, flops={measured_flops}).",
            hint="Report measured, non-negative values.",
        )
    speed = measured_flops / rule.reference_flops
    days = seconds / SECONDS_PER_DAY * speed
    return CreditBreakdown(
        seconds, measured_flops, speed, days, days * rule.credits_per_reference_day
    )


def job_cost(rule: CreditRule, granted: float) -> float:
    """What the submitter pays for a job whose nodes were granted ``granted`` credits."""
    return granted * rule.job_cost_factor


def inference_cost(rule: CreditRule, tokens: int) -> float:
    return tokens / 1000.0 * rule.inference_credits_per_1k_tokens


def balances(entries: list[tuple[str, float]]) -> dict[str, float]:
    """Sum of (account, amount) ledger entries per account."""
    totals: dict[str, float] = {}
    for account, amount in entries:
        totals[account] = totals.get(account, 0.0) + amount
    return totals
