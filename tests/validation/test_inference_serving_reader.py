"""The serving benchmark reader: a run's first wave (a burst) weighed with its steady state,
and the protocol columns of the CloudRift rows read from each row's own scenario text."""

from __future__ import annotations

import csv
import re
from dataclasses import replace

import pytest

from rigwise.estimate.serving import Costs, estimate_serving
from rigwise.validation.inference_readers import default_directory
from rigwise.validation.inference_serving import benchmark_tpot_seconds, first_wave_share


def _paged(concurrency: int) -> object:
    costs = Costs(
        step_seconds=lambda batch: 0.02 + 0.0002 * batch,
        prefill_seconds_per_token=2e-5,
        single_prefill_seconds=0.03,
        compute_bound_at=lambda batch: False,
        kv_preemption=True,
    )
    return estimate_serving(concurrency, 35, 1000, 1000, costs)


def test_the_first_wave_is_the_clients_share_of_the_prompts() -> None:
    assert first_wave_share(400, 1200) == pytest.approx(1 / 3)
    assert first_wave_share(512, 2048) == 0.25
    assert first_wave_share(400, 300) == 1.0  # one burst
    assert first_wave_share(16, 0) == 0.0  # prompts not published: the steady state


def test_a_benchmark_tpot_weighs_its_burst_with_the_steady_state() -> None:
    plan = _paged(36)  # one beyond a batch of 35: in a burst it waits less than it would park
    burst, steady = plan.tpot_burst_s, plan.tpot_s
    assert burst < steady
    assert benchmark_tpot_seconds(plan, 108, "mean") == pytest.approx(burst / 3 + 2 * steady / 3)
    assert benchmark_tpot_seconds(plan, 36, "mean") == pytest.approx(burst)
    assert benchmark_tpot_seconds(plan, 108, "median") == steady
    assert benchmark_tpot_seconds(plan, 0, "mean") == steady
    no_burst = replace(plan, tpot_burst_s=0.0)  # a plan without one (disaggregated)
    assert benchmark_tpot_seconds(no_burst, 108, "mean") == pytest.approx(steady, rel=1e-12)


def test_cloudrift_protocol_columns_say_what_each_scenario_ran() -> None:
    path = default_directory() / "cloudrift_server_benchmark_vllm.csv"
    with path.open(encoding="utf-8") as handle:
        rows = [r for r in csv.DictReader(handle) if r["serving_metric"] in ("ttft", "tpot")]
    assert len(rows) == 52
    for row in rows:
        scenario = row["scenario"]
        found = re.search(r"--num-prompts (\d+)", scenario)
        assert found, scenario
        repeats = 5 if "five repeats" in scenario else 1
        assert int(row["num_prompts"]) == int(found.group(1)) * repeats
        assert row["arrivals"] == ("wave" if "--ignore-eos" in scenario else "staggered")
        assert row["statistic"] == "mean" and f"mean {row['serving_metric'].upper()}" in scenario
