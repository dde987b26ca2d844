"""Reading the hardware catalog: accelerators*.csv, interconnects.csv, systems.yaml.

Rows are validated with pydantic (the edge) and turned into the frozen dataclasses of
``hardware.types`` (the inside). Every bad value is a ``CatalogError`` naming file, row, id and
column. Absent interconnects/systems files give empty tables.

Name resolution (tables in ``hardware.names``): every id, display name, alias and ``default_for``
name is a key, also followed by the memory size ("4090 24GB"). A key shared by several rows (a
family name such as "M3 Max") picks the row whose ``default_for`` names it, else the first such
row in file order; a name that only prefixes keys ("rtx40") picks the biggest variant.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rigwise.catalog.loader import read_csv, read_yaml
from rigwise.errors import CatalogError, validation_message
from rigwise.hardware.names import KEY_TIERS, NameTable, build_table, normalize
from rigwise.hardware.types import DTYPES, Accelerator, Link, Resolution, SystemPreset
from rigwise.units import GiB

GB = 1e9  # bandwidths: decimal GB/s, as vendors quote them
# Memory sizes: vendors' "GB" of DRAM/HBM are binary (a 24 GB RTX 3090 has 24576 MiB in
# nvidia-smi, a 128 GB Mac 128 GiB, an 80 GB A100 81920 MiB), so memory_gb is read as GiB.
TERA = 1e12

_DATE = r"^\d{4}-\d{2}-\d{2}$"
_MONTH = r"^\d{4}-\d{2}$"
_ID = r"^[a-z0-9]+(?:[.-][a-z0-9]+)*$"
Positive = Annotated[float, Field(gt=0)]
NonNegative = Annotated[float, Field(ge=0)]


class AcceleratorRow(BaseModel):
    """One row of an ``accelerators*.csv`` file, as written (human units)."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    id: Annotated[str, Field(pattern=_ID)]
    name: Annotated[str, Field(min_length=1)]
    vendor: Annotated[str, Field(pattern=r"^[a-z0-9]+$")]  # nvidia, amd, intel, apple, google, ...
    kind: Literal["gpu", "unified", "tpu", "npu", "cpu"]
    aliases: str = ""
    default_for: str = ""
    memory_gb: Positive
    memory_type: str = ""
    memory_bandwidth_gb_s: Positive
    fp32_tflops: NonNegative | None = None
    tf32_tflops: NonNegative | None = None
    fp16_tflops: NonNegative | None = None
    bf16_tflops: NonNegative | None = None
    fp16_acc16_tflops: NonNegative | None = None
    fp8_tflops: NonNegative | None = None
    int8_tops: NonNegative | None = None
    fp4_tflops: NonNegative | None = None
    vector_fp32_tflops: NonNegative | None = None
    tdp_w: Positive | None = None
    pcie_gen: Annotated[int, Field(ge=1, le=7)] | None = None
    pcie_lanes: Annotated[int, Field(ge=1, le=256)] | None = None
    nvlink_gb_s: NonNegative | None = None
    form_factor: Literal["pcie", "sxm", "oam", "soc", "mxm", "socket", ""] = ""
    slot_width: Positive | None = None
    power_connectors: str = ""
    launch_year: Annotated[int, Field(ge=1990, le=2100)] | None = None
    launch_price_usd: Positive | None = None
    street_price_usd: Positive | None = None
    street_price_date: Annotated[str, Field(pattern=_MONTH)] | None = None
    rental_usd_per_hour: Positive | None = None
    source: Annotated[str, Field(min_length=1)]
    retrieved: Annotated[str, Field(pattern=_DATE)]
    notes: str = ""

    def flops(self) -> dict[str, float]:
        values = {
            "fp32": self.fp32_tflops or self.vector_fp32_tflops,
            "tf32": self.tf32_tflops,
            "fp16": self.fp16_tflops,
            "bf16": self.bf16_tflops,
            "fp8": self.fp8_tflops,
            "int8": self.int8_tops,
            "fp4": self.fp4_tflops,
        }
        return {dtype: values[dtype] * TERA for dtype in DTYPES if values[dtype]}  # type: ignore[operator]

    def to_accelerator(self, file: str) -> Accelerator:
        return Accelerator(
            id=self.id,
            name=self.name,
            vendor=self.vendor,
            kind=self.kind,
            memory_bytes=self.memory_gb * GiB,
            memory_type=self.memory_type,
            memory_bandwidth_bytes_per_s=self.memory_bandwidth_gb_s * GB,
            flops=self.flops(),
            vector_fp32_flops=(self.vector_fp32_tflops or 0.0) * TERA,
            tdp_watts=self.tdp_w or 0.0,
            pcie_gen=self.pcie_gen,
            pcie_lanes=self.pcie_lanes,
            nvlink_bytes_per_s=(self.nvlink_gb_s or 0.0) * GB,
            form_factor=self.form_factor,
            slot_width=self.slot_width,
            power_connectors=self.power_connectors,
            launch_year=self.launch_year,
            launch_price_usd=self.launch_price_usd,
            street_price_usd=self.street_price_usd,
            street_price_date=self.street_price_date or "",
            rental_usd_per_hour=self.rental_usd_per_hour,
            aliases=_split_list(self.aliases),
            source=self.source,
            retrieved=self.retrieved,
            notes=self.notes,
            fp16_acc16_flops=self.fp16_acc16_tflops * TERA if self.fp16_acc16_tflops else None,
            default_for=_split_list(self.default_for),
            catalog_file=file,
        )


class LinkRow(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    id: Annotated[str, Field(pattern=_ID)]
    name: Annotated[str, Field(min_length=1)]
    kind: Annotated[str, Field(min_length=1)]
    aliases: str = ""
    bandwidth_gb_s: Positive
    latency_us: NonNegative
    source: Annotated[str, Field(min_length=1)]
    retrieved: Annotated[str, Field(pattern=_DATE)]
    notes: str = ""

    def to_link(self) -> Link:
        return Link(
            id=self.id,
            name=self.name,
            kind=self.kind,
            bandwidth_bytes_per_s=self.bandwidth_gb_s * GB,
            latency_s=self.latency_us * 1e-6,
            source=self.source,
            retrieved=self.retrieved,
            aliases=_split_list(self.aliases),
        )


class SystemEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    id: Annotated[str, Field(pattern=_ID)]
    name: Annotated[str, Field(min_length=1)]
    aliases: list[str] | str = ""
    accelerator: Annotated[str, Field(min_length=1)]
    count: Annotated[int, Field(ge=1)]
    intra_link: str | None = None
    network_link: str | None = None
    network_ports: Annotated[int, Field(ge=0)] = 0
    host_memory_gb: Positive | None = None
    price_usd: Positive | None = None
    power_w: Positive | None = None
    source: Annotated[str, Field(min_length=1)]
    retrieved: Annotated[str, Field(pattern=_DATE)]
    notes: str = ""

    def to_preset(self) -> SystemPreset:
        aliases = self.aliases if isinstance(self.aliases, list) else _split_list(self.aliases)
        return SystemPreset(
            id=self.id,
            name=self.name,
            accelerator_id=self.accelerator,
            accelerator_count=self.count,
            intra_link_id=self.intra_link or None,
            network_link_id=self.network_link or None,
            network_ports=self.network_ports,
            host_memory_bytes=self.host_memory_gb * GiB if self.host_memory_gb else None,
            price_usd=self.price_usd,
            power_watts=self.power_w,
            source=self.source,
            retrieved=str(self.retrieved),
            aliases=tuple(aliases),
        )


def _split_list(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(";") if part.strip())


def _describe(error: ValidationError, where: str) -> CatalogError:
    return CatalogError(validation_message(error, where))


def _memory_label(memory_bytes: float) -> str:
    gb = memory_bytes / GiB
    return f"{gb:g}GB"


def _accelerator_names(acc: Accelerator) -> list[str]:
    base = [acc.name, *acc.aliases, *acc.default_for]
    return [acc.id, *base, *(f"{name} {_memory_label(acc.memory_bytes)}" for name in base)]


@dataclass(frozen=True)
class AcceleratorCatalog:
    table: NameTable[Accelerator]

    @property
    def devices(self) -> tuple[Accelerator, ...]:
        return self.table.items

    def resolve(self, name: str) -> Resolution:
        ids = self.table.ids_for(name)
        if not ids:
            ids = self._prefix_family(name)
        if not ids:
            raise self.table.unknown(name)
        chosen = self._default(name, ids)
        others = tuple(i for i in ids if i != chosen)
        if not others and self._is_family_name(name, chosen):
            # 'M3 Max' names one row (its default_for), but the family has more variants.
            others = tuple(i for i in self._prefix_family(name) if i != chosen)
        return Resolution(query=name, accelerator=self.table.by_id[chosen], alternatives=others)

    def _is_family_name(self, name: str, device_id: str) -> bool:
        key = normalize(name)
        return any(normalize(d) == key for d in self.table.by_id[device_id].default_for)

    def _default(self, name: str, ids: tuple[str, ...]) -> str:
        keys = {key_of(name) for key_of in KEY_TIERS}
        for device_id in ids:
            defaults = self.table.by_id[device_id].default_for
            if any(key_of(d) in keys for d in defaults for key_of in KEY_TIERS):
                return device_id
        return ids[0]

    def _prefix_family(self, name: str) -> tuple[str, ...]:
        """'M3 Max' when only 'M3 Max 40-core 128GB' rows exist: the ids whose keys extend it.

        The biggest variant (most bf16 FLOP/s, then most memory) comes first, so a family name
        picks the largest-GPU, largest-memory variant unless a row's ``default_for`` says otherwise.
        """
        key = normalize(name)
        if len(key) < 3:
            return ()
        ids = {i for k, v in self.table.keys.items() if k.startswith(key) for i in v}
        ranked = sorted(
            ids,
            key=lambda i: (
                -self.table.by_id[i].peak_flops("bf16"),
                -self.table.by_id[i].memory_bytes,
                i,
            ),
        )
        return tuple(ranked)


def _package_files(pattern: str) -> list[str]:
    folder = resources.files("rigwise.catalog").joinpath("data")
    names = [entry.name for entry in folder.iterdir() if re.fullmatch(pattern, entry.name)]
    return sorted(names, key=lambda n: (n != "accelerators.csv", n))


def _has_file(name: str) -> bool:
    return resources.files("rigwise.catalog").joinpath("data", name).is_file()


def build_accelerators(files: Mapping[str, Iterable[Mapping[str, str]]]) -> AcceleratorCatalog:
    """Validate rows (file name -> rows as read) and index them; duplicate ids are an error."""
    devices: list[Accelerator] = []
    seen: dict[str, str] = {}
    for file, rows in files.items():
        for number, row in enumerate(rows, start=1):
            values = {k: v for k, v in row.items() if v not in ("", None)}
            where = f"{file}, data row {number} (id {row.get('id', '?')!r})"
            try:
                device = AcceleratorRow.model_validate(values).to_accelerator(file)
            except ValidationError as exc:
                raise _describe(exc, where) from exc
            if device.id in seen:
                raise CatalogError(
                    f"{where}: id {device.id!r} is already defined in {seen[device.id]}."
                )
            seen[device.id] = file
            devices.append(device)
    return AcceleratorCatalog(build_table("GPU", devices, _accelerator_names, lambda a: a.id))


@functools.cache
def accelerator_catalog() -> AcceleratorCatalog:
    files = {name: read_csv(name) for name in _package_files(r"accelerators.*\.csv")}
    return build_accelerators(files)


def build_links(
    rows: Iterable[Mapping[str, str]], file: str = "interconnects.csv"
) -> NameTable[Link]:
    items: list[Link] = []
    for number, row in enumerate(rows, start=1):
        values = {k: v for k, v in row.items() if v not in ("", None)}
        try:
            items.append(LinkRow.model_validate(values).to_link())
        except ValidationError as exc:
            raise _describe(exc, f"{file}, data row {number}") from exc
    return build_table("link", items, lambda lk: [lk.id, lk.name, *lk.aliases], lambda lk: lk.id)


@functools.cache
def link_catalog() -> NameTable[Link]:
    return build_links(read_csv("interconnects.csv") if _has_file("interconnects.csv") else ())


def build_systems(entries: Any, file: str = "systems.yaml") -> NameTable[SystemPreset]:
    if entries is None:
        entries = []
    if not isinstance(entries, list):
        raise CatalogError(f"{file} must be a list of mappings, not {type(entries).__name__}.")
    items: list[SystemPreset] = []
    for number, entry in enumerate(entries, start=1):
        try:
            items.append(SystemEntry.model_validate(entry).to_preset())
        except ValidationError as exc:
            raise _describe(exc, f"{file}, entry {number}") from exc
    return build_table("system", items, lambda s: [s.id, s.name, *s.aliases], lambda s: s.id)


@functools.cache
def system_catalog() -> NameTable[SystemPreset]:
    return build_systems(read_yaml("systems.yaml") if _has_file("systems.yaml") else [])
