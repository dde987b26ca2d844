"""The parts catalog: motherboards, CPUs, RAM, PSUs, cases, risers, cooling, NVLink bridges,
storage, network cards, plus the rules, circuits and power-limit curves the checks use.

Everything is read from ``catalog/data/parts/*.csv`` (columns in catalog/SCHEMA.md, section
"Parts"). Prices carry their date and source; ``Price.is_stale`` says whether a price is older
than an allowed age relative to a given day. The records themselves are
``rigwise.design.part_types``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from rigwise.catalog.loader import optional_float, read_csv
from rigwise.catalog.names import normalize, resolve
from rigwise.design.part_types import (
    Case,
    Cpu,
    Motherboard,
    Price,
    Psu,
    RamModule,
    SimplePart,
    Slot,
    parse_date,
)
from rigwise.errors import CatalogError

T = TypeVar("T")


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


def part_id(name: str) -> str:
    """The id of the part ``name`` names (id, name or alias) in any parts file, for a row that
    names a part without its kind (a user price); ``UnknownNameError`` otherwise."""
    by_id: dict[str, Any] = {}
    aliases: dict[str, str] = {}
    for kind in (*_LOADERS, *_KIND_LABEL):
        ids, table = _index(kind)
        by_id.update(ids)
        for key, value in table.items():
            aliases.setdefault(key, value)
    return resolve(name, aliases, "part", by_id)


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


def circuit_id(name: str) -> str:
    """The circuits.csv id ``name`` stands for, as people type it ('US-120V-15A')."""
    return _table_id(name, circuits(), "circuit")


def region_id(name: str) -> str:
    """The electricity_prices.csv region ``name`` stands for ('US' -> us)."""
    return _table_id(name, electricity_prices(), "electricity region")


def _table_id(name: str, table: Mapping[str, object], kind: str) -> str:
    return resolve(name, {normalize(key): key for key in table}, kind, table)


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


# The part records live in design/part_types.py; they are named here too, where the checks
# and costs have always found them.
__all__ = [
    "Case",
    "Cpu",
    "Motherboard",
    "Price",
    "Psu",
    "RamModule",
    "SimplePart",
    "Slot",
    "cases",
    "circuits",
    "connector_specs",
    "cpus",
    "electricity_prices",
    "get_part",
    "gpu_cooler",
    "motherboards",
    "parse_date",
    "parse_slots",
    "power_limit_points",
    "psus",
    "ram_modules",
    "rule",
    "rules",
    "simple_parts",
]
