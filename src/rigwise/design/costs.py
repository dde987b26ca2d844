"""Money: parts lists with dated prices, electricity per year, TCO, $ per million tokens and
the break-even against renting the same GPUs by the hour.

Formulas (plain accounting, no fitted constants):
    electricity_usd_per_year = wall_watts_load / 1000 * hours_per_day * 365 * usd_per_kwh
                             + wall_watts_idle / 1000 * (24 - hours_per_day) * 365 * usd_per_kwh
    tco_usd = purchase_usd + years * electricity_usd_per_year
    usd_per_million_tokens = tco_usd / (tokens_per_s * 3600 * hours_per_day * 365 * years) * 1e6
    break_even_hours = purchase_usd / (rent_usd_per_hour - electricity_usd_per_hour_load)
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from rigwise.design import parts
from rigwise.design.rigfile import Rig
from rigwise.hardware import Accelerator
from rigwise.serialize import JsonObject


@dataclass(frozen=True)
class PartLine(JsonObject):
    kind: str
    name: str
    quantity: int
    unit_price_usd: float | None
    price_date: str
    price_source: str
    stale: bool

    @property
    def total_usd(self) -> float:
        return (self.unit_price_usd or 0.0) * self.quantity


def _line(
    kind: str, name: str, qty: int, price: parts.Price, used: bool, today: dt.date, max_age: float
) -> PartLine:
    return PartLine(
        kind=kind,
        name=name,
        quantity=qty,
        unit_price_usd=price.pick(used),
        price_date=price.date,
        price_source=price.source,
        stale=price.is_stale(today, max_age),
    )


def accelerator_price(accelerator: Accelerator, used: bool = True) -> parts.Price:
    """The user's imported price for the condition (``rigwise prices import``), else the street
    price (dated) from the accelerator catalog, else the launch price."""
    from rigwise.design.prices import user_price

    mine = user_price("gpu", accelerator.id, "used" if used else "new")
    if mine is not None:
        return parts.Price(mine.usd, mine.usd, mine.date, mine.source)
    if accelerator.street_price_usd is not None:
        return parts.Price(
            None, accelerator.street_price_usd, accelerator.street_price_date, accelerator.source
        )
    launch = f"{accelerator.launch_year}-01-01" if accelerator.launch_year else ""
    return parts.Price(accelerator.launch_price_usd, None, launch, "launch price")


def rig_parts(rig: Rig, today: dt.date, max_age_days: float) -> tuple[PartLine, ...]:
    """The rig's parts list with unit prices, price dates and a stale flag per line (the
    user's imported prices first, ``rigwise.design.prices``)."""
    used = rig.used
    lines = [
        _line(
            "motherboard",
            rig.motherboard.name,
            1,
            _mine(rig.motherboard),
            used,
            today,
            max_age_days,
        ),
        _line("cpu", rig.cpu.name, rig.cpu_count, _mine(rig.cpu), used, today, max_age_days),
        _line("ram", rig.ram.name, rig.ram_count, _mine(rig.ram), used, today, max_age_days),
        _line("psu", rig.psu.name, rig.psu_count, _mine(rig.psu), used, today, max_age_days),
    ]
    if rig.case is not None:
        lines.append(_line("case", rig.case.name, 1, _mine(rig.case), used, today, max_age_days))
    groups: dict[str, list[Any]] = {}
    for gpu in rig.gpus:
        groups.setdefault(gpu.accelerator.id, []).append(gpu)
    for gpus in groups.values():
        acc = gpus[0].accelerator
        lines.append(
            _line(
                "gpu", acc.name, len(gpus), accelerator_price(acc, used), used, today, max_age_days
            )
        )
    extras: list[tuple[str, parts.SimplePart, int]] = [("cooling", c, 1) for c in rig.cooling]
    extras += [("riser", g.riser, 1) for g in rig.gpus if g.riser is not None]
    extras += [("nvlink_bridge", b, 1) for b, _, _ in rig.nvlink]
    extras += [("storage", d, n) for d, n, _ in rig.storage]
    extras += [("network_card", c, 1) for c, _ in rig.network]
    merged: dict[tuple[str, str], tuple[parts.SimplePart, int]] = {}
    for kind, part, count in extras:
        _, previous = merged.get((kind, part.id), (part, 0))
        merged[(kind, part.id)] = (part, previous + count)
    for (kind, _), (part, count) in merged.items():
        lines.append(_line(kind, part.name, count, _mine(part), used, today, max_age_days))
    return tuple(lines)


def _mine(part: Any) -> parts.Price:
    from rigwise.design.prices import part_price

    price: parts.Price = part_price(part.id, part.price)
    return price


def electricity_price(region: str | None = None, usd_per_kwh: float | None = None) -> float:
    if usd_per_kwh is not None:
        return usd_per_kwh
    key = parts.region_id(region) if region else "us"
    return float(parts.electricity_prices()[key]["usd_per_kwh"])


@dataclass(frozen=True)
class CostBreakdown(JsonObject):
    purchase_usd: float
    electricity_usd_per_year: float
    years: float
    tco_usd: float
    usd_per_kwh: float
    hours_per_day: float
    usd_per_million_tokens: float | None
    rent_usd_per_hour: float | None
    break_even_hours: float | None  # hours of use after which owning beats renting


def costs(
    *,
    purchase_usd: float,
    wall_watts_load: float,
    wall_watts_idle: float,
    usd_per_kwh: float,
    hours_per_day: float,
    years: float,
    tokens_per_s: float | None = None,
    rent_usd_per_hour: float | None = None,
) -> CostBreakdown:
    load_kwh = wall_watts_load / 1000 * hours_per_day * 365
    idle_kwh = wall_watts_idle / 1000 * (24 - hours_per_day) * 365
    per_year = (load_kwh + idle_kwh) * usd_per_kwh
    tco = purchase_usd + years * per_year
    per_million = None
    if tokens_per_s:
        tokens = tokens_per_s * 3600 * hours_per_day * 365 * years
        per_million = tco / tokens * 1e6
    break_even = None
    if rent_usd_per_hour:
        margin = rent_usd_per_hour - wall_watts_load / 1000 * usd_per_kwh
        break_even = purchase_usd / margin if margin > 0 else None
    return CostBreakdown(
        purchase_usd=purchase_usd,
        electricity_usd_per_year=per_year,
        years=years,
        tco_usd=tco,
        usd_per_kwh=usd_per_kwh,
        hours_per_day=hours_per_day,
        usd_per_million_tokens=per_million,
        rent_usd_per_hour=rent_usd_per_hour,
        break_even_hours=break_even,
    )
