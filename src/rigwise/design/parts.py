"""The parts catalog: motherboards, CPUs, RAM, PSUs, cases, risers, cooling, NVLink bridges,
storage, network cards, plus the rules, circuits and power-limit curves the checks use.

Everything is read from ``catalog/data/parts/*.csv`` (columns in catalog/SCHEMA.md, section
"Parts"). Prices carry their date and source; ``Price.is_stale`` says whether a price is older
than an allowed age relative to a given day.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from rigwise.catalog.loader import optional_float, read_csv
from rigwise.catalog.names import normalize, resolve
from rigwise.errors import CatalogError

T = TypeVar("T")


@dataclass(frozen=True)
class Price:
    """A price new and/or used, with its date (YYYY-MM-DD or YYYY-MM) and source."""

    new_usd: float | None
    used_usd: float | None
    date: str
    source: str

    def pick(self, used: bool) -> float | None:
        """The used price when asked (falling back to new), else the new price (or used)."""
        first, second = (self.used_usd, self.new_usd) if used else (self.new_usd, self.used_usd)
        return first if first is not None else second

    def age_days(self, today: dt.date) -> int | None:
        day = parse_date(self.date)
        return None if day is None else (today - day).days

    def is_stale(self, today: dt.date, max_age_days: float) -> bool:
        age = self.age_days(today)
        return age is None or age > max_age_days


def parse_date(text: str) -> dt.date | None:
    """'2024-07-01' or '2024-07' -> date; '' -> None."""
    text = (text or "").strip()
    if not text:
        return None
    try:
        return dt.date.fromisoformat(text if len(text) > 7 else f"{text}-01")
    except ValueError:
        return None


@dataclass(frozen=True)
class Slot:
    position: int  # expansion-slot pitch counted from the top of the board
    physical_lanes: int  # mechanical size (x16, x8, ...)
    electrical_lanes: int  # lanes actually wired
    gen: int
    chipset: bool  # wired to the chipset rather than the CPU


@dataclass(frozen=True)
class Motherboard:
    id: str
    name: str
    socket: str
    cpu_sockets: int
    form_factor: str
    slots: tuple[Slot, ...]
    switch_uplink_lanes: int  # >0: slots sit behind PCIe switches sharing this many CPU lanes
    bifurcation: bool
    m2_slots: int
    ram_type: str
    ram_slots: int
    max_ram_bytes: float
    eps_8pin: int
    price: Price
    source: str
    notes: str = ""

    def slot(self, position: int) -> Slot | None:
        return next((s for s in self.slots if s.position == position), None)

    @property
    def server(self) -> bool:
        return self.cpu_sockets > 1 or self.ram_type.endswith("rdimm")


@dataclass(frozen=True)
class Cpu:
    id: str
    name: str
    socket: str
    cores: int
    pcie_lanes: int
    pcie_gen: int
    memory_channels: int
    memory_type: str
    tdp_watts: float
    price: Price
    source: str


@dataclass(frozen=True)
class RamModule:
    id: str
    name: str
    type: str
    module_bytes: float
    speed_mt_s: int
    watts_per_module: float
    price: Price
    source: str


@dataclass(frozen=True)
class Psu:
    id: str
    name: str
    watts: float
    efficiency: float  # AC->DC efficiency under load
    atx_version: str
    pcie_8pin: int
    pcie_12vhpwr: int
    eps_8pin: int
    price: Price
    source: str


@dataclass(frozen=True)
class Case:
    id: str
    name: str
    form_factors: tuple[str, ...]
    expansion_slots: int
    cooling_capacity_watts: float
    price: Price
    source: str


@dataclass(frozen=True)
class SimplePart:
    """Risers, cooling, bridges, storage, network cards: a name, numbers and a price."""

    kind: str
    id: str
    name: str
    values: Mapping[str, str]
    price: Price
    source: str

    def number(self, key: str, default: float = 0.0) -> float:
        value = optional_float(self.values.get(key, ""))
        return default if value is None else value

    def text(self, key: str) -> str:
        return self.values.get(key, "")


def _price(row: Mapping[str, str]) -> Price:
    return Price(
        new_usd=optional_float(row.get("price_new_usd", "")),
        used_usd=optional_float(row.get("price_used_usd", "")),
        date=row.get("price_date", ""),
        source=row.get("price_source", "") or row.get("source", ""),
    )


def parse_slots(text: str, where: str) -> tuple[Slot, ...]:
    """'1:16/16@3;4:16/4@4*' -> slots; '*' marks chipset wiring."""
    slots = []
    for item in filter(None, (part.strip() for part in text.split(";"))):
        try:
            position, rest = item.split(":")
            sizes, gen = rest.split("@")
            physical, electrical = sizes.split("/")
            slots.append(
                Slot(
                    position=int(position),
                    physical_lanes=int(physical),
                    electrical_lanes=int(electrical),
                    gen=int(gen.rstrip("*")),
                    chipset=gen.endswith("*"),
                )
            )
        except ValueError as exc:
            raise CatalogError(
                f"{where}: cannot read slot {item!r}.",
                hint="Write slots like '1:16/16@4;3:16/8@4*' (position:physical/electrical@gen).",
            ) from exc
    return tuple(sorted(slots, key=lambda s: s.position))


def _int(row: Mapping[str, str], key: str, where: str) -> int:
    try:
        return int(float(row.get(key, "") or 0))
    except ValueError as exc:
        raise CatalogError(f"{where}: column {key!r} is not a number: {row.get(key)!r}.") from exc


def _board(row: Mapping[str, str], where: str) -> Motherboard:
    return Motherboard(
        id=row["id"],
        name=row["name"],
        socket=row["socket"],
        cpu_sockets=_int(row, "cpu_sockets", where),
        form_factor=row["form_factor"],
        slots=parse_slots(row["slots"], where),
        switch_uplink_lanes=_int(row, "switch_uplink_lanes", where),
        bifurcation=row.get("bifurcation", "") == "yes",
        m2_slots=_int(row, "m2_slots", where),
        ram_type=row["ram_type"],
        ram_slots=_int(row, "ram_slots", where),
        max_ram_bytes=_int(row, "max_ram_gb", where) * 1e9,
        eps_8pin=_int(row, "eps_8pin", where),
        price=_price(row),
        source=row["source"],
        notes=row.get("notes", ""),
    )


def _cpu(row: Mapping[str, str], where: str) -> Cpu:
    return Cpu(
        id=row["id"],
        name=row["name"],
        socket=row["socket"],
        cores=_int(row, "cores", where),
        pcie_lanes=_int(row, "pcie_lanes", where),
        pcie_gen=_int(row, "pcie_gen", where),
        memory_channels=_int(row, "memory_channels", where),
        memory_type=row["memory_type"],
        tdp_watts=float(row["tdp_w"]),
        price=_price(row),
        source=row["source"],
    )


def _ram(row: Mapping[str, str], where: str) -> RamModule:
    return RamModule(
        id=row["id"],
        name=row["name"],
        type=row["type"],
        module_bytes=_int(row, "module_gb", where) * 1e9,
        speed_mt_s=_int(row, "speed_mt_s", where),
        watts_per_module=float(row["watts_per_module"]),
        price=_price(row),
        source=row["source"],
    )


def _psu(row: Mapping[str, str], where: str) -> Psu:
    return Psu(
        id=row["id"],
        name=row["name"],
        watts=float(row["watts"]),
        efficiency=float(row["efficiency_load"]),
        atx_version=row["atx_version"],
        pcie_8pin=_int(row, "pcie_8pin", where),
        pcie_12vhpwr=_int(row, "pcie_12vhpwr", where),
        eps_8pin=_int(row, "eps_8pin", where),
        price=_price(row),
        source=row["source"],
    )


def _case(row: Mapping[str, str], where: str) -> Case:
    return Case(
        id=row["id"],
        name=row["name"],
        form_factors=tuple(row["form_factors"].split(";")),
        expansion_slots=_int(row, "expansion_slots", where),
        cooling_capacity_watts=float(row["cooling_capacity_w"]),
        price=_price(row),
        source=row["source"],
    )


def _load(name: str, build: Callable[[Mapping[str, str], str], T]) -> tuple[T, ...]:
    rows = read_csv(f"parts/{name}.csv")
    items = []
    for number, row in enumerate(rows, start=2):
        where = f"parts/{name}.csv row {number}"
        try:
            items.append(build(row, where))
        except KeyError as exc:
            raise CatalogError(f"{where}: missing column {exc.args[0]!r}.") from exc
        except ValueError as exc:
            raise CatalogError(f"{where}: {exc}") from exc
    return tuple(items)


@functools.cache
def motherboards() -> tuple[Motherboard, ...]:
    return _load("motherboards", _board)


@functools.cache
def cpus() -> tuple[Cpu, ...]:
    return _load("cpus", _cpu)


@functools.cache
def ram_modules() -> tuple[RamModule, ...]:
    return _load("ram", _ram)


@functools.cache
def psus() -> tuple[Psu, ...]:
    return _load("psus", _psu)


@functools.cache
def cases() -> tuple[Case, ...]:
    return _load("cases", _case)


@functools.cache
def simple_parts(kind: str) -> tuple[SimplePart, ...]:
    """kind: risers | cooling | nvlink_bridges | storage | network_cards."""
    return _load(
        kind,
        lambda row, where: SimplePart(
            kind=kind,
            id=row["id"],
            name=row["name"],
            values=dict(row),
            price=_price(row),
            source=row["source"],
        ),
    )


def _aliases(items: tuple[Any, ...], rows: tuple[dict[str, str], ...]) -> dict[str, str]:
    table: dict[str, str] = {}
    for item, row in zip(items, rows, strict=True):
        for name in (item.id, item.name, *row.get("aliases", "").split(";")):
            if name:
                table.setdefault(normalize(name), item.id)
    return table


_LOADERS: dict[str, tuple[str, Callable[[], tuple[Any, ...]]]] = {
    "motherboard": ("motherboards", motherboards),
    "cpu": ("cpus", cpus),
    "ram": ("ram", ram_modules),
    "psu": ("psus", psus),
    "case": ("cases", cases),
}


@functools.cache
def _index(kind: str) -> tuple[dict[str, Any], dict[str, str]]:
    """(id -> part, normalized alias -> id) for one kind of part."""
    if kind in _LOADERS:
        file_name, loader = _LOADERS[kind]
        items = loader()
    else:
        file_name, items = kind, simple_parts(kind)
    rows = read_csv(f"parts/{file_name}.csv")
    return {item.id: item for item in items}, _aliases(items, rows)


_KIND_LABEL = {
    "risers": "riser",
    "cooling": "cooler",
    "nvlink_bridges": "NVLink bridge",
    "storage": "drive",
    "network_cards": "network card",
}


def get_part(kind: str, name: str) -> Any:
    """A part by id, name or alias; ``UnknownNameError`` with 3 suggestions otherwise."""
    by_id, aliases = _index(kind)
    part_id = resolve(name, aliases, _KIND_LABEL.get(kind, kind), by_id)
    return by_id[part_id]


@functools.cache
def rules() -> dict[str, float]:
    """Thresholds from build_rules.csv (PSU headroom, RAM/VRAM ratios, defaults)."""
    return {row["key"]: float(row["value"]) for row in read_csv("parts/build_rules.csv")}


def rule(key: str) -> float:
    table = rules()
    if key not in table:
        raise CatalogError(f"parts/build_rules.csv has no rule {key!r}.")
    return table[key]


@functools.cache
def circuits() -> dict[str, dict[str, str]]:
    return {row["id"]: row for row in read_csv("parts/circuits.csv")}


@functools.cache
def connector_specs() -> dict[str, dict[str, str]]:
    return {row["id"]: row for row in read_csv("parts/power_connectors.csv")}


@functools.cache
def electricity_prices() -> dict[str, dict[str, str]]:
    return {row["region"]: row for row in read_csv("parts/electricity_prices.csv")}


@functools.cache
def gpu_cooler(accelerator_id: str) -> str:
    """'blower' | 'passive' | 'open-air' (GPUs not in gpu_coolers.csv)."""
    table = {row["accelerator"]: row["cooler"] for row in read_csv("parts/gpu_coolers.csv")}
    return table.get(accelerator_id, "open-air")


@functools.cache
def power_limit_points() -> tuple[dict[str, str], ...]:
    return read_csv("parts/power_limit_curves.csv")
