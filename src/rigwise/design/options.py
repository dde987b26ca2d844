"""One priced, powered, costed and checked option per estimated candidate (``rigwise build``).

``build_option`` turns a candidate and its planner estimate into a ``BuildOption``: a box is
assembled from the parts catalog (``assemble``), checked (``rigcheck``), powered (``power``,
with the measured power-limit curve when ``--power-limit`` applies) and costed (``costs``);
Apple machines and rented GPUs are priced directly. A candidate that misses the target or the
budget returns the reason instead.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace
from typing import Any

from rigwise.design import parts
from rigwise.design.assemble import BoxRequest, assemble_box
from rigwise.design.candidates import Candidate, Format
from rigwise.design.costs import PartLine, costs, electricity_price
from rigwise.design.power import power_limit_effect
from rigwise.design.ranges import option_ranges
from rigwise.design.rigcheck import check_rig
from rigwise.hardware import Accelerator
from rigwise.hardware.power_limits import below_settable


@dataclass(frozen=True)
class DesignRequest:
    model: str
    task: str = "infer"  # infer | serve | finetune | train
    target_tps: float | None = None
    concurrency: int = 1
    deadline_s: float | None = None
    tokens: float | None = None
    budget_usd: float | None = None
    power_limit_watts: float | None = None
    used: bool = True
    form: str | None = None
    circuit: str = "us-120v-15a"
    usd_per_kwh: float | None = None
    region: str | None = None
    hours_per_day: float | None = None
    years: float | None = None
    max_price_age_days: float | None = None
    today: dt.date | None = None
    top: int = 10
    method: str | None = None  # finetune: lora | qlora | full (None: LoRA, then QLoRA)
    rank: str = "target"  # target | price | speed | tco (designer.rank_options)


@dataclass(frozen=True)
class BuildOption:
    kind: str  # single-gpu | multi-gpu-box | multi-node | apple | rent
    on: str
    nodes: int
    network: str | None
    format: Format
    parts: tuple[PartLine, ...]
    purchase_usd: float
    decode_tokens_per_s: float | None
    time_to_train_s: float | None
    power_watts_idle: float
    power_watts_load: float
    electricity_usd_per_year: float
    tco_usd: float
    usd_per_million_tokens: float | None
    rent_usd_per_hour: float | None
    break_even_hours: float | None
    power_limit: dict[str, Any] | None
    checks: dict[str, Any]
    stale_prices: int
    tco_period: str = ""  # what the TCO covers: "3 years at 8 h/day", "one 14.1 h job"
    # P10-P90 of the planner's speed behind the option, and its bias note (design/ranges.py)
    decode_tokens_per_s_interval: list[float] | None = None
    time_to_train_s_interval: list[float] | None = None
    interval_note: str | None = None

    @property
    def speed(self) -> float:
        if self.decode_tokens_per_s is not None:
            return self.decode_tokens_per_s
        return 1.0 / self.time_to_train_s if self.time_to_train_s else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "on": self.on,
            "nodes": self.nodes,
            "network": self.network,
            "engine": self.format.engine,
            "quant": self.format.quant,
            "split": self.format.split,
            "parts": [p.to_dict() for p in self.parts],
            "purchase_usd": self.purchase_usd,
            "decode_tokens_per_s": self.decode_tokens_per_s,
            "time_to_train_s": self.time_to_train_s,
            "power_watts_idle": self.power_watts_idle,
            "power_watts_load": self.power_watts_load,
            "electricity_usd_per_year": self.electricity_usd_per_year,
            "tco_usd": self.tco_usd,
            "usd_per_million_tokens": self.usd_per_million_tokens,
            "rent_usd_per_hour": self.rent_usd_per_hour,
            "break_even_hours": self.break_even_hours,
            "power_limit": self.power_limit,
            "checks": self.checks,
            "stale_prices": self.stale_prices,
            "tco_period": self.tco_period,
            **option_ranges(self),
        }


def _speed_scale(request: DesignRequest, gpu: Accelerator) -> tuple[float, dict[str, Any] | None]:
    if not request.power_limit_watts or request.power_limit_watts >= gpu.tdp_watts:
        return 1.0, None
    workload = "decode" if request.task in ("infer", "serve") else "training"
    effect = power_limit_effect(gpu.id, gpu.tdp_watts, workload, request.power_limit_watts)
    return effect.relative_throughput, effect.to_dict()


def _settings(request: DesignRequest) -> tuple[float, float, float, float]:
    hours = request.hours_per_day or parts.rule("hours_per_day_default")
    years = request.years or parts.rule("tco_years_default")
    kwh = electricity_price(request.region, request.usd_per_kwh)
    max_age = request.max_price_age_days or parts.rule("price_max_age_days")
    return hours, years, kwh, max_age


def _meets(request: DesignRequest, decode: float | None, train_s: float | None) -> str:
    if request.task in ("infer", "serve"):
        if request.target_tps and (decode or 0.0) < request.target_tps:
            return "below target speed"
    elif request.deadline_s and (train_s is None or train_s > request.deadline_s):
        return "misses deadline"
    return ""


def build_option(
    request: DesignRequest,
    cand: Candidate,
    fmt: Format,
    decode: float | None,
    train_s: float | None,
) -> tuple[BuildOption | None, str]:
    settings = _settings(request)
    today = request.today or dt.date.today()
    if cand.kind in ("rent", "apple") and (missed := _meets(request, decode, train_s)):
        return None, missed
    if cand.kind == "rent":
        return _rent_option(cand, fmt, decode, train_s, settings), ""
    if cand.kind == "apple":
        option = _apple_option(request, cand, fmt, decode, settings, today)
        option = replace(option, time_to_train_s=train_s) if option else None
    else:
        option, why = _box_option(request, cand, fmt, decode, train_s, settings, today)
        if option is None:
            return None, why
    return (replace(option, tco_period=_period(settings)) if option else None), ""


def _period(settings: tuple[float, float, float, float]) -> str:
    hours, years, _, _ = settings
    return f"{years:g} years at {hours:g} h/day"


def _rent_option(
    cand: Candidate,
    fmt: Format,
    decode: float | None,
    train_s: float | None,
    settings: tuple[float, float, float, float],
) -> BuildOption:
    """Renting the same GPUs: for the training job's hours (finetune/train), else for the same
    hours a day over the same years as a bought build."""
    hours, years, _, _ = settings
    gpus = cand.count * cand.nodes
    rent = (cand.gpu.rental_usd_per_hour or 0.0) * gpus
    if train_s:
        from rigwise.units import format_seconds

        tco, period = rent * train_s / 3600, f"one {format_seconds(train_s)} job"
    else:
        tco, period = rent * hours * 365 * years, _period(settings)
    tokens = (decode or 0.0) * 3600 * hours * 365 * years
    line = PartLine(
        "rental",
        cand.gpu.name,
        gpus,
        cand.gpu.rental_usd_per_hour,
        cand.gpu.retrieved,
        cand.gpu.source,
        False,
    )
    return BuildOption(
        kind="rent",
        on=cand.on,
        nodes=cand.nodes,
        network=cand.network,
        format=fmt,
        parts=(line,),
        purchase_usd=0.0,
        decode_tokens_per_s=decode,
        time_to_train_s=train_s,
        power_watts_idle=0.0,
        power_watts_load=0.0,
        electricity_usd_per_year=0.0,
        tco_usd=tco,
        usd_per_million_tokens=(tco / tokens * 1e6) if tokens else None,
        rent_usd_per_hour=rent,
        break_even_hours=None,
        power_limit=None,
        checks={"verdict": "ok", "problems": []},
        stale_prices=0,
        tco_period=period,
    )


def _network_card(network: str | None, used: bool) -> parts.SimplePart | None:
    """The cheapest card for the network between boxes (None when no card has that link)."""
    cards = [c for c in parts.simple_parts("network_cards") if c.text("link") == network]
    priced = [c for c in cards if c.price.pick(used) is not None]
    return min(priced, key=lambda c: c.price.pick(used) or 0.0) if priced else None


def _node_lines(
    lines: tuple[PartLine, ...], cand: Candidate, used: bool, today: dt.date, max_age: float
) -> tuple[tuple[PartLine, ...], float]:
    """Per-node parts times the node count, plus one NIC per node for a multi-node build."""
    scaled = tuple(replace(line, quantity=line.quantity * cand.nodes) for line in lines)
    if cand.nodes == 1:
        return scaled, 0.0
    card = _network_card(cand.network, used)
    if card is None:
        return scaled, 0.0
    nic = PartLine(
        "network_card",
        card.name,
        cand.nodes,
        card.price.pick(used),
        card.price.date,
        card.price.source,
        card.price.is_stale(today, max_age),
    )
    return (*scaled, nic), card.number("watts") * cand.nodes


def _box_rig(request: DesignRequest, cand: Candidate) -> tuple[Any, str]:
    """The candidate's box assembled from compatible parts, or why none is."""
    box = BoxRequest(
        cand.gpu,
        cand.count,
        request.used,
        request.task,
        request.power_limit_watts,
        request.circuit,
        request.form,
    )
    rig, why = _assemble_cached(box)
    if rig is None:
        check = why.split(":")[0]
        hint = "; try --circuit eu-230v-16a or --power-limit" if check == "circuit" else ""
        return None, f"no compatible parts ({check}{hint})"
    return rig, ""


def _box_option(
    request: DesignRequest,
    cand: Candidate,
    fmt: Format,
    decode: float | None,
    train_s: float | None,
    settings: tuple[float, float, float, float],
    today: dt.date,
) -> tuple[BuildOption | None, str]:
    hours, years, kwh, max_age = settings
    if below_settable(request.power_limit_watts, cand.gpu):  # a cap above: stock power
        return None, "power limit below what the GPU accepts"
    rig, why = _box_rig(request, cand)
    if rig is None:
        return None, why
    report = check_rig(rig, today=today, max_price_age_days=max_age)
    scale, limit_note = _speed_scale(request, cand.gpu)
    decode = decode * scale if decode is not None else None
    train_s = train_s / scale if train_s else train_s
    if missed := _meets(request, decode, train_s):
        return None, missed
    lines, nic_watts = _node_lines(report.parts, cand, request.used, today, max_age)
    purchase = sum(line.total_usd for line in lines)
    if request.budget_usd is not None and purchase > request.budget_usd:
        return None, "over budget"
    load = report.power_load.wall_watts * cand.nodes + nic_watts
    idle = report.power_idle.wall_watts * cand.nodes + nic_watts
    rent = (cand.gpu.rental_usd_per_hour or 0.0) * cand.count * cand.nodes
    cost = costs(
        purchase_usd=purchase,
        wall_watts_load=load,
        wall_watts_idle=idle,
        usd_per_kwh=kwh,
        hours_per_day=hours,
        years=years,
        tokens_per_s=decode,
        rent_usd_per_hour=rent or None,
    )
    return BuildOption(
        kind=cand.kind,
        on=cand.on,
        nodes=cand.nodes,
        network=cand.network,
        format=fmt,
        parts=lines,
        purchase_usd=purchase,
        decode_tokens_per_s=decode,
        time_to_train_s=train_s,
        power_watts_idle=idle,
        power_watts_load=load,
        electricity_usd_per_year=cost.electricity_usd_per_year,
        tco_usd=cost.tco_usd,
        usd_per_million_tokens=cost.usd_per_million_tokens,
        rent_usd_per_hour=cost.rent_usd_per_hour,
        break_even_hours=cost.break_even_hours,
        power_limit=limit_note,
        checks={"verdict": report.verdict, "problems": [p.to_dict() for p in report.problems]},
        stale_prices=sum(1 for line in lines if line.stale),
    ), ""


def _apple_option(
    request: DesignRequest,
    cand: Candidate,
    fmt: Format,
    decode: float | None,
    settings: tuple[float, float, float, float],
    today: dt.date,
) -> BuildOption | None:
    hours, years, kwh, max_age = settings
    gpu = cand.gpu
    price = gpu.launch_price_usd if gpu.launch_price_usd is not None else gpu.street_price_usd
    date = gpu.street_price_date or (f"{gpu.launch_year}-01-01" if gpu.launch_year else "")
    line = PartLine(
        "system",
        gpu.name,
        cand.nodes,
        price,
        date,
        gpu.source,
        parts.Price(price, None, date, "").is_stale(today, max_age),
    )
    purchase = (price or 0.0) * cand.nodes
    idle = gpu.tdp_watts * parts.rule("gpu_idle_fraction") * cand.nodes
    cost = costs(
        purchase_usd=purchase,
        wall_watts_load=gpu.tdp_watts * cand.nodes,
        wall_watts_idle=idle,
        usd_per_kwh=kwh,
        hours_per_day=hours,
        years=years,
        tokens_per_s=decode,
    )
    return BuildOption(
        kind="apple",
        on=cand.on,
        nodes=cand.nodes,
        network=cand.network,
        format=fmt,
        parts=(line,),
        purchase_usd=purchase,
        decode_tokens_per_s=decode,
        time_to_train_s=None,
        power_watts_idle=idle,
        power_watts_load=gpu.tdp_watts * cand.nodes,
        electricity_usd_per_year=cost.electricity_usd_per_year,
        tco_usd=cost.tco_usd,
        usd_per_million_tokens=cost.usd_per_million_tokens,
        rent_usd_per_hour=None,
        break_even_hours=None,
        power_limit=None,
        checks={"verdict": "ok", "problems": []},
        stale_prices=int(line.stale),
    )


_BOXES: dict[tuple[object, ...], tuple[Any, str]] = {}


def _assemble_cached(request: BoxRequest) -> tuple[Any, str]:
    """Boxes repeat across formats and multi-node candidates; assemble each once."""
    key = (
        request.gpu.id,
        request.gpu.tdp_watts,
        request.count,
        request.used,
        request.task,
        request.power_limit_watts,
        request.circuit,
        request.form,
    )
    if key not in _BOXES:
        _BOXES[key] = assemble_box(request)
    return _BOXES[key]
