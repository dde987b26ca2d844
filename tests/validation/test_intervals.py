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
    group_bounds,
    interval_for,
    packaged_table,
)
from rigwise.estimate.plan_intervals import inference_regime, training_regime
from rigwise.validation.all_rows import all_comparisons
from rigwise.validation.coverage import (
    RegimeCoverage,
    annotate,
    coverage_by_regime,
    overall,
)
from rigwise.validation.intervals import table_from
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
    covered, rows = overall(annotate(comparisons))
    assert rows >= 400
    # measured at writing: 427 / 535 = 79.8 % (device held out, width factors fitted without
    # that device's cases); judged regimes (>= 20 rows from >= 3 devices): GeForce llama.cpp
    # decode 79 %, prefill 78 %, H100 peak memory 86 %. 2026-11-24, after the issue #13
    # serving physics and the 80 %-aimed width factors: 462 / 548 = 84.3 %. After the 11 B200
    # rows (issue #14; rigwise +19 to +50 % on them): 478 / 559 = 85.5 %: B200 has too few
    # devices for a regime of its own, so its over-predicted rows widen the pooled training
    # range and 16 more held-out A100 rows fall inside it. Then each back-off got its own
    # unseen factor (past a device class x1.04, past an engine x1.50, instead of the hardest
    # scheme's x1.70 for both): 447 / 559 = 80.0 %; serving|tensorrt-llm|nvidia-hbm 97 -> 73 %.
    assert 0.75 <= covered / rows <= 0.85


def test_a_device_with_many_rows_weighs_as_much_as_one_with_few() -> None:
    # 40 rows of one device at 0.0, 60 devices with one row each at 0.5: by rows, 40 % of the
    # residuals are 0.0 and the P10 is 0.0; by device, the big one is 1/61 of the weight
    residuals = [0.0] * 40 + [0.5] * 60
    groups = ["big"] * 40 + [f"d{i}" for i in range(60)]
    assert conformal_bounds(residuals) == (0.0, 0.5)
    assert group_bounds(residuals, groups) == (0.5, 0.5)


def test_width_factors_never_score_the_devices_they_were_calibrated_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import rigwise.validation.coverage as coverage

    rows = [
        Comparison("s", "decode", f"r{i}", 100.0, 100.0 + i % 7, regime=GDDR.key(),
                   group=f"dev{i % 8}")
        for i in range(80)
    ]  # fmt: skip
    used: list[tuple[str | None, set[str]]] = []
    real = coverage.fit_cases

    def spy(cases: dict, without: str | None = None) -> list:
        left = {c[1] for v in cases.values() for c in v if c[1] != without}
        used.append((without, left))
        return real(cases, without)

    monkeypatch.setattr(coverage, "fit_cases", spy)
    annotate(rows)
    assert {w for w, _ in used} == {f"dev{d}" for d in range(8)}  # one fit per held-out device
    for without, left in used:
        assert without not in left and len(left) == 7  # fitted on the seven others only


def test_a_device_whose_cases_alone_need_widening_is_not_covered_by_its_own_factor() -> None:
    # four devices: two agree, one sits 0.3 off, one 0.6 off. Held out, only the 0.6 device
    # falls outside (10 of 40 cases): a device factor fitted on all 40 cases would grow to
    # cover 80 % and so cover it; fitted on the other three devices' cases it stays 1
    rows = [
        Comparison("s", "decode", f"r{d}{i}", 100.0, 100.0 * math.exp(0.01 * (i % 5) + off),
                   regime=GDDR.key(), group=f"dev{d}")
        for d, off in enumerate((0.0, 0.0, 0.3, 0.6))
        for i in range(10)
    ]  # fmt: skip
    from rigwise.validation.widening import calibrate

    leaky = next(f for f in calibrate(rows) if f.factor == "device" and f.metric == "*")
    assert leaky.value > 1.5  # with its own cases, the factor would cover the odd device
    odd = [c.inside for c in annotate(rows) if c.group == "dev3"]
    assert odd and not any(odd)  # scored with the factor fitted without it: outside


def test_a_regime_with_too_few_devices_says_so_instead_of_claiming_coverage() -> None:
    two = RegimeCoverage("serving|tensorrt-llm|nvidia-hbm", 100, 63, devices=2, in_scope=True)
    assert not two.judged and two.within_target is None and "too few" in two.note()
    assert two.to_dict()["within_target"] is None
    six = RegimeCoverage("decode|llama.cpp|nvidia-gddr", 75, 57, devices=6, in_scope=True)
    assert six.judged and six.within_target is True and six.note() == ""
    low = RegimeCoverage("prefill|llama.cpp|nvidia-gddr", 75, 47, devices=6, in_scope=True)
    assert low.within_target is False and "outside" in low.note()


def test_coverage_is_reported_per_regime_with_rows_and_devices(comparisons: list) -> None:
    annotated = annotate(comparisons)
    coarse = coverage_by_regime(annotated)
    fine = coverage_by_regime(annotated, fields=5)
    assert all(c.regime.count("|") == 2 for c in coarse)
    assert all(c.regime.count("|") == 4 for c in fine)
    in_scope = [c for c in coarse if c.in_scope]
    assert sum(c.rows for c in in_scope) == overall(annotated)[1]
    assert any(c.judged for c in in_scope) and any(not c.judged for c in in_scope)


def test_every_regime_a_plan_can_map_to_has_a_range() -> None:
    from rigwise.api.infer import ENGINES
    from rigwise.estimate.engine_overheads import device_class
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


@pytest.mark.parametrize("which", ["inference", "training"])
def test_validate_json_has_errors_by_role_and_coverage_by_regime(which: str) -> None:
    from rigwise.validation.inference import validate_inference
    from rigwise.validation.training import validate_training

    data = (validate_inference if which == "inference" else validate_training)().to_dict()
    for s in data["stats"]:
        keys = ("role", "rows", "median_abs_error_pct", "p90_abs_error_pct", "median_error_pct")
        assert all(k in s for k in keys) and "interval_coverage" in s
    assert {s["role"] for s in data["stats"]} >= {"independent", "fit"}
    regimes = data["interval_coverage_by_regime"]
    assert regimes and all(
        {"rows", "devices", "coverage", "judged", "note"} <= set(r) for r in regimes
    )
    assert all(r["within_target"] is None for r in regimes if not r["judged"])
