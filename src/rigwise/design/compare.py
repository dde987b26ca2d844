"""Buy vs rent vs API for a build: break-even against renting the same GPUs and against a hosted
API's price per million tokens (``api_prices.csv``), at the stated duty cycle.

Owning beats renting once the purchase is paid back by the rent saved less the electricity the
build draws (``costs.break_even_hours``); at ``hours_per_day`` that is a number of months. Against
an API the build's generated tokens are priced at the API's output price: owning wins once the
purchase is paid back by (API cost - electricity) per month; never when the electricity alone
costs more than the API would for the same tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rigwise.catalog.loader import read_csv
from rigwise.design.ranges import api_ranges, option_ranges
from rigwise.serialize import JsonObject

if TYPE_CHECKING:
    from rigwise.design.options import BuildOption

DAYS_PER_MONTH = 365.0 / 12.0


@dataclass(frozen=True)
class ApiPrice:
    provider: str
    api_model: str
    usd_per_million_input: float
    usd_per_million_output: float
    price_date: str
    source: str


def api_prices(model: str) -> tuple[ApiPrice, ...]:
    """Hosted prices of ``model`` or a comparable model, cheapest output first."""
    rows = [r for r in read_csv("api_prices.csv") if model in r["comparable"].split(";")]
    prices = [
        ApiPrice(
            r["provider"],
            r["api_model"],
            float(r["usd_per_million_input"]),
            float(r["usd_per_million_output"]),
            r["price_date"],
            r["source"],
        )
        for r in rows
    ]
    return tuple(sorted(prices, key=lambda p: p.usd_per_million_output))


@dataclass(frozen=True)
class Comparison(JsonObject):
    """One bought build against renting its GPUs and against the cheapest comparable API."""

    build: str
    hours_per_day: float
    purchase_usd: float
    usd_per_million_tokens: float | None  # the build's TCO over its generated tokens
    rent_usd_per_hour: float | None
    rent_break_even_hours: float | None
    rent_break_even_months: float | None
    api: ApiPrice | None
    api_usd_per_month: float | None  # the build's monthly tokens at the API's output price
    electricity_usd_per_month: float
    api_break_even_months: float | None  # None: never (or no API price / no tokens)
    # P10-P90 of the speed-derived figures above (design/ranges.py)
    usd_per_million_tokens_interval: list[float] | None = None
    api_usd_per_month_interval: list[float] | None = None
    api_break_even_months_interval: list[float | None] | None = None

    def lines(self) -> tuple[str, ...]:
        """The comparison as sentences for the text output."""
        out = []
        duty = f"at {self.hours_per_day:g} h/day"
        if self.rent_usd_per_hour and self.rent_break_even_hours:
            out.append(
                f"buy vs rent: {self.build} pays for itself against renting the same GPUs "
                f"(${self.rent_usd_per_hour:,.2f}/h) after {self.rent_break_even_hours:,.0f} h "
                f"of use = {self.rent_break_even_months:,.1f} months {duty}"
            )
        if self.api is not None and self.usd_per_million_tokens is not None:
            api = self.api
            when = (
                f"after {self.api_break_even_months:,.1f} months {duty}"
                if self.api_break_even_months is not None
                else "never at this duty cycle (the electricity alone costs more)"
            )
            out.append(
                f"buy vs API: {self.build} makes tokens at ${self.usd_per_million_tokens:,.2f}/M "
                f"{duty} (TCO over its years); {api.provider} {api.api_model} charges "
                f"${api.usd_per_million_output:,.2f}/M output, ${api.usd_per_million_input:,.2f}/M "
                f"input (price of {api.price_date}); owning pays back {when}"
            )
        return tuple(out)


def compare(option: BuildOption, model: str, hours_per_day: float) -> Comparison:
    """Buy vs rent vs API for one bought option."""
    months_of = 1.0 / (hours_per_day * DAYS_PER_MONTH)
    rent_months = option.break_even_hours * months_of if option.break_even_hours else None
    electricity = option.electricity_usd_per_year / 12.0
    prices = api_prices(model)
    api = prices[0] if prices else None
    api_month = None
    api_months = None
    if api is not None and option.decode_tokens_per_s:
        tokens = option.decode_tokens_per_s * 3600 * hours_per_day * DAYS_PER_MONTH
        api_month = tokens / 1e6 * api.usd_per_million_output
        margin = api_month - electricity
        api_months = option.purchase_usd / margin if margin > 0 else None
    return Comparison(
        build=option.on + (f" x{option.nodes} nodes" if option.nodes > 1 else ""),
        hours_per_day=hours_per_day,
        purchase_usd=option.purchase_usd,
        usd_per_million_tokens=option.usd_per_million_tokens,
        rent_usd_per_hour=option.rent_usd_per_hour,
        rent_break_even_hours=option.break_even_hours,
        rent_break_even_months=rent_months,
        api=api,
        api_usd_per_month=api_month,
        electricity_usd_per_month=electricity,
        api_break_even_months=api_months,
        usd_per_million_tokens_interval=option_ranges(option)["usd_per_million_tokens_interval"],
        **api_ranges(option, api_month, electricity),
    )
