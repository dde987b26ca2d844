"""``list_gpus(**options) -> GpuList``: the accelerator catalog filtered, sorted and valued.

Options are ``rigwise gpus``'s long option names (``vendor``, ``kind``, ``min_memory``,
``max_price``, ``sort``, ``names``); the CLI, the web UI's Compare page and ``/api/gpus`` share it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rigwise.errors import UnknownNameError, closest
from rigwise.hardware import Accelerator, accelerators, resolve_accelerator
from rigwise.option_fields import no_flag
from rigwise.units import GB, GiB, parse_bytes
from rigwise.validate_input import validated

TERA = 1e12

SortKey = Literal[
    "name",
    "memory",
    "bandwidth",
    "bf16",
    "fp8",
    "fp4",
    "tdp",
    "price",
    "rental",
    "gb-per-usd",
    "gbs-per-usd",
    "tflops-per-watt",
]


def value_metrics(acc: Accelerator) -> dict[str, float | None]:
    """What a dollar or a watt buys: GB and GB/s per USD of price, dense bf16 TFLOPS per watt."""
    price = acc.price_usd
    bf16 = acc.flops.get("bf16") or acc.flops.get("fp16")
    return {
        "gb_per_usd": acc.memory_bytes / GiB / price if price else None,  # GB as sold (GiB)
        "gb_s_per_usd": acc.memory_bandwidth_bytes_per_s / GB / price if price else None,
        "bf16_tflops_per_watt": bf16 / TERA / acc.tdp_watts if bf16 and acc.tdp_watts else None,
    }


# sort key -> (value of a device, True when bigger is better)
SORT_KEYS: dict[str, tuple[Callable[[Accelerator], Any], bool]] = {
    "name": (lambda a: a.name.lower(), False),
    "memory": (lambda a: a.memory_bytes, True),
    "bandwidth": (lambda a: a.memory_bandwidth_bytes_per_s, True),
    "bf16": (lambda a: a.flops.get("bf16"), True),
    "fp8": (lambda a: a.flops.get("fp8"), True),
    "fp4": (lambda a: a.flops.get("fp4"), True),
    "tdp": (lambda a: a.tdp_watts or None, False),
    "price": (lambda a: a.price_usd, False),
    "rental": (lambda a: a.rental_usd_per_hour, False),
    "gb-per-usd": (lambda a: value_metrics(a)["gb_per_usd"], True),
    "gbs-per-usd": (lambda a: value_metrics(a)["gb_s_per_usd"], True),
    "tflops-per-watt": (lambda a: value_metrics(a)["bf16_tflops_per_watt"], True),
}


class GpusOptions(BaseModel):
    """The options of ``rigwise gpus`` (and ``/api/gpus``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    vendor: str | None = Field(None, description="nvidia, amd, intel, apple, google")
    kind: Literal["gpu", "unified", "tpu", "npu", "cpu"] | None = None
    min_memory: str | None = Field(None, description="e.g. 24GB")
    max_price: float | None = Field(None, ge=0, description="USD")
    sort: SortKey = "memory"
    names: str | None = Field(None, description="comma-separated names to compare side by side")

    @field_validator("max_price", mode="before")
    @classmethod
    def _no_flag(cls, value: object) -> object:
        return no_flag(None)(value)  # max_price=True was $1


@dataclass(frozen=True)
class GpuList:
    devices: tuple[Accelerator, ...]
    notes: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "devices": [{**d.to_dict(), "value": value_metrics(d)} for d in self.devices],
            "notes": list(self.notes),
        }


def sort_devices(devices: list[Accelerator], key: str) -> list[Accelerator]:
    """Sort by ``key``; devices without the figure go last whatever the direction."""
    value_of, descending = SORT_KEYS[key]
    known = [d for d in devices if value_of(d) is not None]
    unknown = [d for d in devices if value_of(d) is None]
    return sorted(known, key=value_of, reverse=descending) + unknown


def list_gpus(options: GpusOptions | None = None, /, **fields: object) -> GpuList:
    """The catalog filtered and sorted: a ``GpusOptions``, or its fields as keywords."""
    given = {**(options.model_dump(exclude_unset=True) if options else {}), **fields}
    opts = (  # bad values are InputError naming them (a raw ValidationError was raised)
        options
        if options is not None and not fields
        else validated(GpusOptions, given, "Bad option", "See `rigwise gpus --help`.")
    )
    notes: list[str] = []
    if opts.names:
        devices = []
        for name in (n.strip() for n in opts.names.split(",") if n.strip()):
            resolution = resolve_accelerator(name)
            devices.append(resolution.accelerator)
            if resolution.note:
                notes.append(resolution.note)
        return GpuList(tuple(devices), tuple(notes))
    devices = list(accelerators())
    if opts.vendor:
        vendor, known = opts.vendor.strip().lower(), sorted({d.vendor for d in devices})
        if vendor not in known:  # was an empty list, as if the vendor had no devices
            raise UnknownNameError("vendor", opts.vendor, closest(vendor, known))
        devices = [d for d in devices if d.vendor == vendor]
    if opts.kind:
        devices = [d for d in devices if d.kind == opts.kind]
    if opts.min_memory:
        floor = parse_bytes(opts.min_memory)
        devices = [d for d in devices if d.memory_bytes >= floor]
    if opts.max_price is not None:
        devices = [d for d in devices if d.price_usd is not None and d.price_usd <= opts.max_price]
    return GpuList(tuple(sort_devices(devices, opts.sort)), tuple(notes))
