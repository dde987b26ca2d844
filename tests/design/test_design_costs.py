from __future__ import annotations

import pytest

from rigwise.design.costs import costs, electricity_price
from rigwise.errors import UnknownNameError


def test_electricity_tco_and_tokens() -> None:
    result = costs(
        purchase_usd=2000,
        wall_watts_load=1000,
        wall_watts_idle=100,
        usd_per_kwh=0.2,
        hours_per_day=8,
        years=3,
        tokens_per_s=20,
    )
    per_year = (1.0 * 8 * 365 + 0.1 * 16 * 365) * 0.2
    assert result.electricity_usd_per_year == pytest.approx(per_year)
    assert result.tco_usd == pytest.approx(2000 + 3 * per_year)
    tokens = 20 * 3600 * 8 * 365 * 3
    assert result.usd_per_million_tokens == pytest.approx(result.tco_usd / tokens * 1e6)


def test_break_even_against_renting() -> None:
    result = costs(
        purchase_usd=1000,
        wall_watts_load=500,
        wall_watts_idle=0,
        usd_per_kwh=0.2,
        hours_per_day=24,
        years=1,
        rent_usd_per_hour=0.6,
    )
    assert result.break_even_hours == pytest.approx(1000 / (0.6 - 0.1))
    never = costs(
        purchase_usd=1000,
        wall_watts_load=5000,
        wall_watts_idle=0,
        usd_per_kwh=0.2,
        hours_per_day=24,
        years=1,
        rent_usd_per_hour=0.6,
    )
    assert never.break_even_hours is None  # running costs more than renting


def test_electricity_regions() -> None:
    assert electricity_price("germany") > electricity_price("us") > 0
    assert electricity_price(usd_per_kwh=0.5) == 0.5
    with pytest.raises(UnknownNameError):
        electricity_price("atlantis")


def test_a_region_reads_as_people_type_it() -> None:
    # before: 'rigwise build MODEL --region US' said "Unknown electricity region 'US'. Did you
    # mean: us-california, us, uk?"
    assert electricity_price("US") == electricity_price("us")
    assert electricity_price("US California") == electricity_price("us-california")
