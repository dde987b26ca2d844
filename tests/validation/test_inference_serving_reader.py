"""The serving benchmark reader: a run's first wave (a burst) weighed with its steady state,
and the protocol columns of the CloudRift rows read from each row's own scenario text."""

from __future__ import annotations

import csv
import re
from dataclasses import replace

import pytest

from rigwise.estimate.serving import Costs, ServingEstimate, estimate_serving
from rigwise.validation.inference_readers import default_directory
from rigwise.validation.inference_serving import benchmark_tpot_seconds, first_wave_share


def _paged(concurrency: int) -> ServingEstimate:
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


def test_pure_decode_rows_are_planned_in_process_at_the_decode_step() -> None:
    # vllm_public_serving.csv, vLLM PR #53060: a priming run caches the prompts, the batch enters
    # decode together and no prefill chunk lands in the measured steps; the harness drives the
    # engine, no API server. Such a row's TPOT is the running batch's decode step, not a wave's
    # TPOT (which spreads the other members' prefills over a request's tokens)
    from rigwise.api.infer import plan_inference
    from rigwise.validation.inference import _predicted
    from rigwise.validation.inference_readers import load_measurements

    measurements, _ = load_measurements()
    pr = ("Qwen2.5-0.5B-Instruct H100 PCIe 80GB", "Qwen3-8B-Base A100 80GB PCIe")
    rows = [m for m in measurements if m.label.startswith(tuple(f"Qwen/{p}" for p in pr))]
    assert len(rows) == 22
    assert all(m.pure_decode and m.options["api_server"] is False for m in rows)
    assert not any(m.pure_decode for m in measurements if m not in rows)
    long = next(m for m in rows if m.label.endswith("16384/128 c8 tpot"))
    plan = plan_inference(**long.options, levers=False)
    assert plan.serving is not None
    step = plan.serving.step_seconds
    assert _predicted(plan, "tpot", long.arrivals, pure_decode=True) == step
    assert benchmark_tpot_seconds(plan.serving, *long.arrivals[1:]) > 2 * step
