"""P10-P90 ranges: the conformal table, back-off and widening, held-out coverage, the packaged
table's freshness, and the ranges on plan JSON (issue 15, item 2)."""

from __future__ import annotations

import math

import pytest

from rigwise.estimate.intervals import (
    MIN_ROWS,
    Regime,
    build_table,
    conformal_bounds,
    interval_for,
    packaged_table,
)
from rigwise.estimate.plan_intervals import inference_regime, training_regime
from rigwise.validation.all_rows import all_comparisons
from rigwise.validation.intervals import annotate, coverage_by_regime, table_from
from rigwise.validation.stats import Comparison

GDDR = Regime("decode", "llama.cpp", "nvidia-gddr", "quantized", "1")


def _rows(n: int, groups: int, regime: Regime = GDDR, spread: float = 0.1) -> list:
    return [(regime, spread * (i / (n - 1) - 0.5), f"dev{i % groups}", 1, "src") for i in range(n)]


def test_conformal_bounds_take_the_ranks_that_cover_eighty_percent() -> None:
    values = [float(i) for i in range(1, 20)]  # n = 19: ranks 2 and 18
    assert conformal_bounds(values) == (2.0, 18.0)
    assert conformal_bounds([5.0, 1.0, 3.0]) == (1.0, 5.0)  # too few rows: the extremes


def test_a_regime_needs_enough_rows_from_more_than_one_device() -> None:
    assert GDDR.key() not in build_table(_rows(MIN_ROWS - 1, 3))
    assert GDDR.key() not in build_table(_rows(MIN_ROWS + 5, 1))
    table = build_table(_rows(MIN_ROWS + 5, 3))
    assert table[GDDR.key()].rows == MIN_ROWS + 5
    assert table["decode|*|*|*|*"].rows == MIN_ROWS + 5  # every back-off level is stored


def test_a_known_regime_is_not_widened() -> None:
    found = interval_for(build_table(_rows(30, 3)), GDDR, devices=1)
    assert found is not None and not found.widened and found.notes == ()
    assert found.low_factor < 1.0 < found.high_factor
    assert found.rate(100.0)[0] == pytest.approx(100.0 * found.low_factor)
    assert found.time(2.0) == pytest.approx([2.0 / found.high_factor, 2.0 / found.low_factor])


def test_an_unseen_device_class_backs_off_and_is_widened_and_said_so() -> None:
    table = build_table(_rows(30, 3))
    known = interval_for(table, GDDR, 1)
    unseen = interval_for(table, Regime("decode", "llama.cpp", "amd-hbm", "quantized", "1"), 1)
    assert known is not None and unseen is not None
    assert unseen.widened and "device_class amd-hbm" in unseen.notes[0]
    assert math.log(unseen.high_factor / unseen.low_factor) == pytest.approx(
        1.5 * math.log(known.high_factor / known.low_factor)
    )


def test_more_devices_than_any_validated_row_widens() -> None:
    found = interval_for(build_table(_rows(30, 3)), GDDR, devices=16)
    assert found is not None and found.widened and "validated up to 1" in found.notes[-1]


def test_held_out_coverage_never_lets_a_device_set_its_own_range() -> None:
    # 20 rows on two devices agree within 2 %; a third device is 50 % off. Held out, its rows
    # must fall outside (with them in the pool they would widen the range to cover themselves).
    rows = [
        Comparison("s", "decode", f"r{i}", 100.0, 100.0 + (i % 5) * 0.5, regime=GDDR.key(),
                   group=f"dev{i % 2}")
        for i in range(20)
    ] + [
        Comparison("s", "decode", f"x{i}", 100.0, 150.0, regime=GDDR.key(), group="odd")
        for i in range(12)
    ]  # fmt: skip
    annotated = annotate(rows)
    assert all(c.inside is False for c in annotated if c.group == "odd")
    assert sum(c.inside is True for c in annotated if c.group != "odd") >= 10


@pytest.fixture(scope="module")
def comparisons() -> list[Comparison]:
    return all_comparisons()


def test_the_packaged_table_is_what_the_validation_rows_give_now(comparisons: list) -> None:
    fresh, stored = table_from(comparisons), packaged_table()
    hint = "stale: run `rigwise validate intervals --write` and commit the table"
    assert set(fresh) == set(stored), hint
    for key, now in fresh.items():
        assert (now.rows, now.groups) == (stored[key].rows, stored[key].groups), f"{key}: {hint}"
        assert now.log_q10 == pytest.approx(stored[key].log_q10, abs=2e-4), f"{key}: {hint}"
        assert now.log_q90 == pytest.approx(stored[key].log_q90, abs=2e-4), f"{key}: {hint}"


def test_held_out_coverage_is_computed_and_near_eighty_percent_overall(
    comparisons: list,
) -> None:
    coverage = [c for c in coverage_by_regime(annotate(comparisons)) if c.in_scope]
    rows = sum(c.rows for c in coverage)
    covered = sum(c.covered for c in coverage)
    assert rows >= 400
    # measured at writing: 378 / 500 = 76 % with the widening calibrated on held-out coverage
    # (401 / 499 with the x1.5 / x1.25 guesses); per regime from 31 % (multi-GPU prefill on
    # GeForce cards) to 100 % (the README's per-regime table names each miss)
    assert 0.75 <= covered / rows <= 0.85


def test_every_regime_a_plan_can_map_to_has_a_range() -> None:
    from rigwise.api.infer import ENGINES
    from rigwise.estimate.inference_memory import device_class
    from rigwise.estimate.intervals import lookup
    from rigwise.hardware import accelerators as catalog

    accelerators = catalog()
    classes = {device_class(a) for a in accelerators} | {"mixed"}
    for metric in ("decode", "prefill", "serving"):
        for engine in ENGINES:
            for cls in classes:
                for quant in ("Q4_K_M", "F16", "FP8", "NVFP4"):
                    for devices in (1, 4, 64, 1024):
                        regime = inference_regime(metric, engine, cls, quant, devices)
                        assert lookup(regime, devices) is not None, regime.key()
    for accelerator in accelerators:
        for metric in ("train_throughput", "train_memory"):
            regime = training_regime(metric, accelerator.id, 64)
            assert lookup(regime, 64) is not None, regime.key()
