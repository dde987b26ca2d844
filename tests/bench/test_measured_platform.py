"""A poor catalog match: the bench stores the platform as measured (issue 15, item 3 / A)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from click.testing import CliRunner

from rigwise.bench import calibration as store
from rigwise.bench.measured import (
    MEASURED_ID,
    latest_measured_platform,
    measured_figures,
    poor_match,
    to_accelerator,
)
from rigwise.bench.result import Measurement
from rigwise.cli import cli

FP = "vm-2cpu"
EPYC = "epyc-9654-ddr5-4800"


def _vm() -> list[Measurement]:
    # a 2-vCPU VM whose CPU string names an EPYC: 9 GB/s against a 460.8 GB/s catalog peak
    return [
        Measurement("memory_triad", "cpu", 9.0e9, "B/s", peak=460.8e9),
        Measurement("memory_copy", "cpu", 8.0e9, "B/s", peak=460.8e9),
        Measurement("matmul_fp32", "cpu", 60e9, "FLOP/s", peak=20e12),
        Measurement("matmul_bf16", "cpu", 20e9, "FLOP/s"),
        Measurement("llm_decode", "ollama", 5.0, "tokens/s"),  # not the CPU's own figure
    ]


def test_a_vm_matched_to_a_server_is_a_poor_match_and_says_which_figure_shows_it() -> None:
    why = poor_match(EPYC, _vm())
    assert why is not None and "memory_triad" in why and EPYC in why and "0.020" in why
    assert poor_match(None, _vm()) == "no catalog platform matches this CPU"
    good = [Measurement("memory_triad", "cpu", 300e9, "B/s", peak=460.8e9)]
    assert poor_match(EPYC, good) is None


def test_the_measured_platform_carries_the_measured_figures() -> None:
    figures = measured_figures(_vm(), "AMD EPYC 9654", 1, 2, 8 * 2**30)
    assert figures is not None
    acc = to_accelerator(figures, 7, "2026-11-23T10:00:00+00:00")
    assert acc.id == MEASURED_ID and acc.kind == "cpu"
    assert acc.memory_bandwidth_bytes_per_s == 9.0e9  # the better of triad and copy
    assert acc.flops == {"fp32": 60e9, "bf16": 20e9} and acc.vector_fp32_flops == 60e9
    assert acc.memory_bytes == 8 * 2**30 and "run 7" in acc.source and "2 threads" in acc.notes
    no_matmul = [m for m in _vm() if not m.name.startswith("matmul")]
    assert measured_figures(no_matmul, "x", 1, 2, 1.0) is None  # half a platform is none


def test_the_newest_stored_measured_platform_is_found_with_its_run_and_age() -> None:
    assert latest_measured_platform(FP) is None
    figures = measured_figures(_vm(), "AMD EPYC 9654", 1, 2, 8 * 2**30)
    old = {"measured_platform": {"reason": "old", "figures": {**figures, "cores": 9}}}
    store.save_run(FP, "2026-11-20T10:00:00+00:00", True, old, {})
    new = {"measured_platform": {"reason": "poor", "figures": figures}}
    run = store.save_run(FP, "2026-11-23T10:00:00+00:00", True, new, {})
    store.save_run(FP, "2026-11-23T11:00:00+00:00", True, {"measured_platform": None}, {})
    found = latest_measured_platform(FP)
    assert found is not None and found.run_id == run and found.reason == "poor"
    assert found.age_s > 0
    text = found.describe()
    assert f"run {run}" in text and "9.0 GB/s" in text and "old" in text and "(poor)" in text


def _store_vm(fingerprint: str, started_at: str) -> int:
    figures = measured_figures(_vm(), "AMD EPYC 9654", 1, 2, 8 * 2**30)
    platform = {"measured_platform": {"reason": "no catalog platform matches this CPU",
                                      "figures": figures}}  # fmt: skip
    return store.save_run(fingerprint, started_at, True, platform, {})


def test_this_machine_plans_on_the_newest_of_measured_platform_and_stored_factors() -> None:
    from rigwise.bench.measured import MEASURED_ON, this_machine_calibration

    assert this_machine_calibration(EPYC, FP) is None  # nothing stored: nothing to plan on
    store.save_run(
        FP, "2026-11-20T10:00:00+00:00", False, {}, {EPYC: {"matmul_efficiency_fp32": 0.5}}
    )
    older = this_machine_calibration(EPYC, FP)
    assert older is not None and older.on == "this-machine" and older.factors
    run = _store_vm(FP, "2026-11-23T10:00:00+00:00")
    found = this_machine_calibration(EPYC, FP)
    assert found is not None and found.on == MEASURED_ON and found.factors == {}
    assert f"run {run}" in found.said and "old" in found.said and "9.0 GB/s" in found.said


def test_infer_on_this_machine_calibrated_plans_on_the_measured_bandwidth(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import rigwise.bench.measured as measured

    monkeypatch.setattr(measured, "current_fingerprint", lambda: FP)
    args = ["infer", "llama-3.2-1b", "--on", "this-machine", "--json", "--no-levers"]
    refused = CliRunner().invoke(cli, [*args, "--calibrated"])
    assert refused.exit_code == 2 and "rigwise bench --quick" in refused.output
    run = _store_vm(FP, datetime.now(UTC).isoformat(timespec="seconds"))
    done = CliRunner().invoke(cli, [*args, "--calibrated"])
    assert done.exit_code == 0, done.output
    plan = json.loads(done.stdout)
    said = plan["notes"][0]  # which stored measurement, and how old, on the plan itself
    assert said.startswith("--calibrated: ") and f"measured platform from run {run}" in said
    assert "0.0 h old" in said
    assert plan["hardware"] == "this-machine-measured"
    weights = sum(d["weights_bytes"] for d in plan["memory"]["per_device"])
    # 9 GB/s measured: decode cannot read the weights faster than that
    assert plan["decode"]["tokens_per_s"] <= 9.0e9 / weights
    assert plan["decode"]["bound"] == "memory bandwidth"
