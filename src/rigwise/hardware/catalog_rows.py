"""The hardware catalog's rows as written (pydantic, the edge): accelerators*.csv,
interconnects.csv, systems.yaml -> the frozen dataclasses of ``hardware.types``.

Imported only when the tables are built from the files (``hardware.catalog``; a command that
finds them in the disk cache of ``catalog.cache`` never loads pydantic for them). Every bad
value is a ``CatalogError`` naming file, row, id and column.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rigwise.errors import CatalogError, validation_message
from rigwise.hardware.types import DTYPES, Accelerator, Link, SystemPreset
from rigwise.units import GB, GiB  # bandwidths: decimal GB/s, as vendors quote them

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


def accelerator_rows(files: Mapping[str, Iterable[Mapping[str, str]]]) -> list[Accelerator]:
    """Validate rows (file name -> rows as read), in order; duplicate ids are an error."""
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
    return devices


def link_rows(rows: Iterable[Mapping[str, str]], file: str) -> list[Link]:
    items: list[Link] = []
    for number, row in enumerate(rows, start=1):
        values = {k: v for k, v in row.items() if v not in ("", None)}
        try:
            items.append(LinkRow.model_validate(values).to_link())
        except ValidationError as exc:
            raise _describe(exc, f"{file}, data row {number}") from exc
    return items


def system_entries(entries: Any, file: str) -> list[SystemPreset]:
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
    return items
