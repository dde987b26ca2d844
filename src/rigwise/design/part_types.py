"""The parts the build designer reads from ``catalog/data/parts/*.csv``, as frozen records:
motherboards (with their slots), CPUs, RAM, PSUs, cases and the simple parts (risers, cooling,
bridges, storage, network cards), each with its dated ``Price``. Loading them is
``rigwise.design.parts``."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass

from rigwise.catalog.loader import optional_float


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
