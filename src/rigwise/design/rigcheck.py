"""``check_rig``: run every compatibility rule on a rig and report verdict, problems with fixes,
the lane budget, power at idle and load, the PSU the 150% rule asks for, and the priced parts
list with stale prices flagged (relative to ``today``, which tests pin).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from rigwise.design import checks, checks_power, parts
from rigwise.design.costs import PartLine, rig_parts
from rigwise.design.power import PowerBreakdown, rig_power
from rigwise.design.rigfile import Rig


@dataclass(frozen=True)
class RigCheck:
    rig_name: str
    verdict: str  # ok | warnings | fails
    problems: tuple[checks.Problem, ...]
    lanes: checks.LaneBudget
    power_idle: PowerBreakdown
    power_load: PowerBreakdown
    psu_watts: float
    psu_recommended_watts: float
    parts: tuple[PartLine, ...]
    purchase_usd: float
    stale_prices: int
    today: str
    max_price_age_days: float

    @property
    def ok(self) -> bool:
        return self.verdict != "fails"

    def to_dict(self) -> dict[str, Any]:
        return {
            "rig": self.rig_name,
            "verdict": self.verdict,
            "ok": self.ok,
            "problems": [p.to_dict() for p in self.problems],
            "lanes": self.lanes.to_dict(),
            "power_watts_idle": self.power_idle.wall_watts,
            "power_watts_load": self.power_load.wall_watts,
            "power_idle": self.power_idle.to_dict(),
            "power_load": self.power_load.to_dict(),
            "psu_watts": self.psu_watts,
            "psu_recommended_watts": self.psu_recommended_watts,
            "parts": [p.to_dict() for p in self.parts],
            "purchase_usd": self.purchase_usd,
            "stale_prices": self.stale_prices,
            "today": self.today,
            "max_price_age_days": self.max_price_age_days,
        }


def verdict_of(problems: tuple[checks.Problem, ...]) -> str:
    if any(p.severity == "error" for p in problems):
        return "fails"
    if any(p.severity == "warning" for p in problems):
        return "warnings"
    return "ok"


def rig_problems(rig: Rig, load: PowerBreakdown) -> tuple[checks.Problem, ...]:
    budget = checks.lane_budget(rig)
    found = [
        *checks.check_platform(rig),
        *checks.check_slots(rig),
        *checks.check_widths(rig),
        *checks.check_case(rig),
        *checks.check_lanes(rig, budget),
        *checks_power.check_psu(rig, load),
        *checks_power.check_transients(rig, load),
        *checks_power.check_connectors(rig),
        *checks_power.check_circuit(rig, load),
        *checks_power.check_ram_vs_vram(rig),
        *checks_power.check_nvlink(rig),
        *checks_power.check_cooling(rig, load),
    ]
    order = {"error": 0, "warning": 1, "info": 2}
    return tuple(sorted(found, key=lambda p: order.get(p.severity, 3)))


def check_rig(
    rig: Rig, *, today: dt.date | None = None, max_price_age_days: float | None = None
) -> RigCheck:
    """Every rule on ``rig``; 'fails' when any problem is an error."""
    today = today or dt.date.today()
    max_age = (
        max_price_age_days if max_price_age_days is not None else parts.rule("price_max_age_days")
    )
    load = rig_power(rig, "load")
    idle = rig_power(rig, "idle")
    problems = rig_problems(rig, load)
    lines = rig_parts(rig, today, max_age)
    stale = [line for line in lines if line.stale]
    if stale:
        names = ", ".join(line.name for line in stale[:4]) + (" ..." if len(stale) > 4 else "")
        problems += (
            checks.Problem(
                "prices",
                "info",
                f"{len(stale)} price(s) older than {max_age:g} days or undated: {names}.",
                "Check current prices before buying.",
            ),
        )
    return RigCheck(
        rig_name=rig.name,
        verdict=verdict_of(problems),
        problems=problems,
        lanes=checks.lane_budget(rig),
        power_idle=idle,
        power_load=load,
        psu_watts=rig.psu.watts * rig.psu_count,
        psu_recommended_watts=load.total_watts * parts.rule("psu_headroom_factor"),
        parts=lines,
        purchase_usd=sum(line.total_usd for line in lines),
        stale_prices=len(stale),
        today=today.isoformat(),
        max_price_age_days=max_age,
    )
