"""Held-out coverage and how much a regime's coverage can say (issue 15): the finite-sample
rank of the ranges, back-off with its own factors, a row scored against a table without it,
and the binomial judgement of a regime."""

from __future__ import annotations

import math
import random

import pytest

from rigwise.estimate.intervals import (
    UNWIDENED,
    Regime,
    Widths,
    build_table,
    conformal_bounds,
    interval_for,
)
from rigwise.validation.coverage import (
    JUDGE_ROWS,
    RegimeCoverage,
    _without_row,
    annotate,
    coverage_by_regime,
    device_correlation,
    pools_of,
)
from rigwise.validation.intervals import pool_rows, table_from
from rigwise.validation.stats import Comparison, percentile

GDDR = "decode|llama.cpp|nvidia-gddr|quantized|1"


def _comparison(regime: str, group: str, residual: float, inside: bool | None = None) -> Comparison:
    return Comparison("s", regime.split("|")[0], group, 100.0, 100.0 * math.exp(residual),
                      regime=regime, group=group, inside=inside)  # fmt: skip


@pytest.mark.parametrize("n", [9, 10, 14, 19, 30])
def test_the_range_takes_the_split_conformal_ranks(n: int) -> None:
    # the floor(0.1 (n + 1))-th and ceil(0.9 (n + 1))-th smallest of n exchangeable rows
    low, high = conformal_bounds([float(i) for i in range(1, n + 1)])
    assert (low, high) == (math.floor(0.1 * (n + 1)), math.ceil(0.9 * (n + 1)))


def test_small_regimes_are_not_narrow_the_plain_percentiles_are() -> None:
    # a new row from the same distribution lands inside the conformal range of n = 10 rows
    # with probability (9 - 1) / 11 = 82 % (ranks 1 and 10: the extremes); the plain
    # interpolated P10-P90 of 10 rows covers about 0.8 (n - 1) / (n + 1) = 65 %
    rng = random.Random(15)
    trials, conformal, plain = 4000, 0, 0
    for _ in range(trials):
        rows = [rng.gauss(0.0, 0.1) for _ in range(10)]
        new = rng.gauss(0.0, 0.1)
        low, high = conformal_bounds(rows)
        conformal += low <= new <= high
        plain += percentile(rows, 10) <= new <= percentile(rows, 90)
    assert 0.79 <= conformal / trials <= 0.85
    assert plain / trials < 0.72


def test_back_off_takes_the_factor_of_what_it_dropped() -> None:
    rows = [
        (Regime(*GDDR.split("|")), 0.1 * (i / 29 - 0.5), f"d{i % 3}", 1, "s") for i in range(30)
    ]
    table = build_table(rows)
    widths = Widths(unseen_class=1.5, scale=1.0, device=1.0, unseen_engine=3.0)
    base = interval_for(table, Regime(*GDDR.split("|")), 1, widths)
    # precision and scale dropped: the same rows, not widened
    fp16 = interval_for(table, Regime("decode", "llama.cpp", "nvidia-gddr", "16-bit", "2-8"), 2)
    past_class = interval_for(table, Regime("decode", "llama.cpp", "cpu", "quantized", "1"), 1,
                              widths)  # fmt: skip
    past_engine = interval_for(table, Regime("decode", "vllm", "cpu", "quantized", "1"), 1, widths)
    assert base is not None and fp16 is not None and not fp16.widened
    assert past_class is not None and past_engine is not None

    def width(i: object) -> float:
        return math.log(i.high_factor / i.low_factor)  # type: ignore[attr-defined]

    assert width(fp16) == pytest.approx(width(base))
    assert width(past_class) == pytest.approx(1.5 * width(base))
    assert width(past_engine) == pytest.approx(3.0 * width(base))
    assert past_class.basis == "decode|llama.cpp|*|*|*" and past_engine.basis == "decode|*|*|*|*"


def test_a_row_held_out_alone_meets_the_table_rebuilt_without_it() -> None:
    rng = random.Random(3)
    rows = [_comparison(GDDR, f"d{i % 3}", rng.gauss(0.0, 0.1)) for i in range(12)]
    rows += [_comparison("decode|llama.cpp|apple-lpddr|16-bit|1", f"a{i % 2}", 0.05 * i)
             for i in range(10)]  # fmt: skip
    full, pools = table_from(rows), pools_of(pool_rows(rows))
    for i, c in enumerate(rows):
        assert _without_row(full, pools, c) == table_from(rows[:i] + rows[i + 1 :])


def test_a_row_that_sets_its_own_range_in_sample_is_outside_held_out() -> None:
    # 12 devices of one row each within +-5 %, one of them at +60 %: with 12 rows the P90 is the
    # 12th smallest, the outlier itself (inside in-sample); held out, alone or with its
    # device, the other 11 rows' range (their extremes) misses it
    rows = [_comparison(GDDR, f"d{i}", 0.1 * (i / 10 - 0.5)) for i in range(11)]
    rows.append(_comparison(GDDR, "odd", 0.6))
    in_sample = interval_for(table_from(rows), Regime(*GDDR.split("|")), 1, UNWIDENED)
    assert in_sample is not None and in_sample.high_factor == pytest.approx(math.exp(0.6))
    odd = annotate(rows)[-1]
    assert odd.inside is False and odd.inside_seen is False


def test_a_regime_is_judged_only_where_its_binomial_sd_is_within_the_band() -> None:
    assert JUDGE_ROWS == 64  # sqrt(0.16 / 64) = 5 %
    enough = RegimeCoverage("r", 64, 51, devices=3, in_scope=True, effective_rows=64)
    assert enough.sd == pytest.approx(0.05) and enough.judged and enough.within_target
    short = RegimeCoverage("r", 63, 50, devices=3, in_scope=True, effective_rows=63)
    assert not short.judged and short.within_target is None and "too few" in short.note()
    # 11 of 11 is 20 points above 80 %, under 2 sd of ~6 independent rows (2 x 16 %): chance
    vllm = RegimeCoverage("r", 11, 11, devices=2, in_scope=True, effective_rows=6.0)
    assert vllm.consistent and "within 2 sd" in vllm.note()
    # 0 of 6 is 80 points below, over 2 sd of ~4 rows (2 x 20 %): the range misses them
    b200 = RegimeCoverage("r", 6, 0, devices=2, in_scope=True, effective_rows=4.0)
    assert not b200.consistent and "a miss" in b200.note()
    assert b200.to_dict()["consistent_with_target"] is False


def test_rows_of_one_device_that_err_together_count_as_fewer_rows() -> None:
    # every device's rows all inside or all outside: perfectly correlated, 2 devices of 10
    # rows are worth 2 rows; independent rows (inside/outside alternating within devices,
    # the same share in each) are worth themselves
    together = [_comparison(GDDR, f"d{i % 4}", 0.0, inside=i % 4 != 0) for i in range(40)]
    apart = [_comparison(GDDR, f"d{i % 4}", 0.0, inside=(i // 4) % 5 != 0) for i in range(40)]
    assert device_correlation(together) == pytest.approx(1.0)
    assert device_correlation(apart) == 0.0
    assert coverage_by_regime(together)[0].effective_rows == pytest.approx(4.0)
    assert coverage_by_regime(apart)[0].effective_rows == pytest.approx(40.0)
