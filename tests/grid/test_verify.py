"""The grid's own verification of a joining machine: the verdict rests on what the grid
measured, and claims far above the measurement fail."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rigwise.catalog.loader import read_yaml
from rigwise.grid.policy import DEFAULT_POLICY_FILE, MachineFacts, load_policy
from rigwise.grid.verify import (
    VerificationRule,
    best_of,
    judge,
    measure_node,
    only_speed_failed,
    timed_out,
)

RULE = VerificationRule.from_policy_data(read_yaml(DEFAULT_POLICY_FILE))


def test_rule_is_read_from_the_packaged_policy() -> None:
    assert 0 < RULE.min_fraction_of_claim < 1 and RULE.timeout_s > 0 and RULE.payload_bytes > 0


def test_an_honest_claim_is_admitted_on_the_grids_figures(make_facts: Any) -> None:
    claimed = make_facts(measured_flops=1e11)
    measured = make_facts(measured_flops=0.8e11, network_bytes_per_s=5e8)
    verified, verdict = judge(load_policy(), claimed, measured, RULE)
    assert verdict.admitted, verdict.reasons
    assert verified.measured_flops == 0.8e11  # the grid's figure, not the claim
    assert verified.network_bytes_per_s == 5e8


def test_an_inflated_claim_is_rejected_even_above_the_minimum(make_facts: Any) -> None:
    claimed = make_facts(measured_flops=1e15)
    measured = make_facts(measured_flops=1e11)  # far above the policy's 5 GFLOP/s minimum
    _, verdict = judge(load_policy(), claimed, measured, RULE)
    assert not verdict.admitted
    assert verdict.reasons == [
        "verification: flops: claimed 1e+03 TFLOP/s, the grid measured 0.1 TFLOP/s "
        "(below 50% of the claim)"
    ]


def test_a_machine_meeting_the_policy_only_on_paper_is_rejected(make_facts: Any) -> None:
    claimed = make_facts(measured_flops=6e9, disk_free_bytes=500e9)
    measured = make_facts(measured_flops=4e9, disk_free_bytes=2e9)
    _, verdict = judge(load_policy(), claimed, measured, RULE)
    failed = {check.requirement for check in verdict.checks if not check.passed}
    assert failed == {"measured_flops", "disk_free"}  # within 50% of the claim, below policy


def test_missing_gpus_and_cores_fail(make_facts: Any, make_gpus: Any) -> None:
    claimed = make_facts(gpus=make_gpus(2), cpu_cores=64)
    measured = make_facts(gpus=make_gpus(1, memory_bytes=12e9), cpu_cores=8)
    verified, verdict = judge(load_policy(), claimed, measured, RULE)
    failed = {check.requirement for check in verdict.checks if not check.passed}
    assert failed == {"claimed_gpus", "claimed_gpu_memory", "claimed_cpu_cores"}
    assert len(verified.gpus) == 1 and verified.gpus[0].memory_bytes == 12e9
    assert verified.cpu_cores == 8


def test_timeout_counts_from_the_join() -> None:
    assert not timed_out(RULE, joined_at=1000.0, now=1000.0 + RULE.timeout_s - 1)
    assert timed_out(RULE, joined_at=1000.0, now=1000.0 + RULE.timeout_s + 1)


def test_measure_node_measures_this_machine(tmp_path: Path) -> None:
    """The function the grid runs on a node, run here: real figures, the link timed."""
    facts = MachineFacts.from_dict(measure_node(str(tmp_path), "lab", "sw1", lambda: 4_000_000))
    assert facts.measured_flops > 1e8 and facts.measured_memory_bandwidth_bytes_per_s > 1e8
    assert facts.network_bytes_per_s > 4_000_000  # 4 MB "fetched" in well under a second
    assert facts.disk_path == str(tmp_path) and facts.disk_free_bytes > 0
    assert (facts.site, facts.switch) == ("lab", "sw1")


def test_only_a_speed_short_is_worth_measuring_again(make_facts: Any, make_gpus: Any) -> None:
    claimed = make_facts(measured_flops=1e11)
    _, slow = judge(load_policy(), claimed, make_facts(measured_flops=0.3e11), RULE)
    assert not slow.admitted and only_speed_failed(slow)
    fewer = make_facts(measured_flops=0.3e11, cpu_cores=1)  # and it has fewer cores than claimed
    _, short = judge(load_policy(), make_facts(measured_flops=1e11, cpu_cores=8), fewer, RULE)
    assert not short.admitted and not only_speed_failed(short)
    _, fine = judge(load_policy(), claimed, claimed, RULE)
    assert fine.admitted and not only_speed_failed(fine)


def test_two_measurements_keep_each_speed_at_its_best(make_facts: Any) -> None:
    first = make_facts(measured_flops=2e11, measured_memory_bandwidth_bytes_per_s=5e9)
    second = make_facts(measured_flops=1e11, measured_memory_bandwidth_bytes_per_s=9e9)
    best = best_of(first, second)
    assert best.measured_flops == 2e11 and best.measured_memory_bandwidth_bytes_per_s == 9e9
    assert RULE.attempts == 2
