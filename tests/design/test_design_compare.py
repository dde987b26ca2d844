"""Buy vs rent vs API: break-even arithmetic and the dated price table."""

from __future__ import annotations

from dataclasses import replace

import pytest
from test_design_rank import _option

from rigwise.design.compare import DAYS_PER_MONTH, api_prices, compare


def test_every_api_price_is_dated_and_sourced() -> None:
    prices = api_prices("llama-3.1-70b")
    assert prices and all(p.price_date and p.source for p in prices)
    outputs = [p.usd_per_million_output for p in prices]
    assert outputs == sorted(outputs)


def test_rent_break_even_in_months_at_the_duty_cycle() -> None:
    option = replace(_option("2x rtx-3090", 2000, 20.0), break_even_hours=4000.0,
                     rent_usd_per_hour=0.8)  # fmt: skip
    result = compare(option, "llama-3.1-70b", hours_per_day=8)
    assert result.rent_break_even_months == pytest.approx(4000 / (8 * DAYS_PER_MONTH))
    assert "after 4,000 h of use" in result.lines()[0]


def test_api_break_even_is_never_when_electricity_costs_more() -> None:
    slow = replace(_option("box", 2000, 20.0), electricity_usd_per_year=600.0)
    result = compare(slow, "llama-3.1-70b", hours_per_day=8)
    # 20 tok/s x 8 h x 30.4 d = 17.5 M tokens a month: $13.8 at $0.79/M, below $50 of power
    assert result.api_usd_per_month == pytest.approx(20 * 3600 * 8 * DAYS_PER_MONTH / 1e6 * 0.79)
    assert result.api_break_even_months is None and "never" in result.lines()[-1]
    fast = replace(slow, decode_tokens_per_s=2000.0)
    months = compare(fast, "llama-3.1-70b", hours_per_day=8).api_break_even_months
    assert months == pytest.approx(2000 / (2000 * 3600 * 8 * DAYS_PER_MONTH / 1e6 * 0.79 - 50))


def test_no_comparable_api_means_no_api_line() -> None:
    result = compare(_option("box", 2000, 20.0), "gpt2", hours_per_day=8)
    assert result.api is None and all("API" not in line for line in result.lines())
