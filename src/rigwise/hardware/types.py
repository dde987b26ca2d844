"""Hardware as frozen dataclasses: Accelerator, Link, Node, Cluster, SystemPreset.

Built from the catalog (``catalog/data``, read by ``hardware.catalog``); nothing here hard-codes a
spec. SI units inside: bytes, bytes per second (per direction for links), FLOP/s (dense, never
sparse), watts, seconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

DTYPES = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8", "fp4")


@dataclass(frozen=True)
class Accelerator:
    """One device that runs models: a GPU, an Apple chip, a TPU, or a CPU platform."""

    id: str  # catalog id, e.g. "rtx-4090"
    name: str  # display name, e.g. "NVIDIA GeForce RTX 4090"
    vendor: str  # nvidia | amd | intel | apple | google | cpu vendor
    kind: str  # gpu | unified | tpu | npu | cpu
    memory_bytes: float
    memory_type: str
    memory_bandwidth_bytes_per_s: float
    flops: Mapping[str, float]  # dense FLOP/s (or OP/s for int8) per dtype in DTYPES
    vector_fp32_flops: float  # non-tensor fp32; 0.0 where the vendor does not publish it
    tdp_watts: float  # 0.0 where the vendor publishes no TDP (TPUs)
    pcie_gen: int | None = None
    pcie_lanes: int | None = None
    nvlink_bytes_per_s: float = 0.0  # per direction, all links of one device together
    form_factor: str = ""
    slot_width: float | None = None
    power_connectors: str = ""
    launch_year: int | None = None
    launch_price_usd: float | None = None
    street_price_usd: float | None = None
    street_price_date: str = ""
    rental_usd_per_hour: float | None = None
    aliases: tuple[str, ...] = ()
    source: str = ""
    retrieved: str = ""
    notes: str = ""
    fp16_acc16_flops: float | None = None  # dense fp16 with fp16 accumulate, where it differs
    default_for: tuple[str, ...] = ()  # family names this row is the default variant of
    catalog_file: str = ""

    def peak_flops(self, dtype: str) -> float:
        """Dense peak for ``dtype``; falls back to the nearest wider dtype the device has."""
        order = {"fp4": ("fp4", "fp8", "fp16", "bf16", "fp32"), "fp8": ("fp8", "fp16", "bf16")}
        for candidate in (*order.get(dtype, (dtype,)), "fp16", "bf16", "fp32"):
            value = self.flops.get(candidate)
            if value:
                return value
        return self.vector_fp32_flops

    @property
    def price_usd(self) -> float | None:
        """The street price where known, else the launch price (``None`` when neither is)."""
        return self.street_price_usd if self.street_price_usd else self.launch_price_usd

    def to_dict(self) -> dict[str, Any]:
        """The documented JSON (catalog/SCHEMA.md, "JSON keys of a device")."""
        return {
            "id": self.id,
            "name": self.name,
            "vendor": self.vendor,
            "kind": self.kind,
            "memory_bytes": self.memory_bytes,
            "memory_type": self.memory_type,
            "memory_bandwidth_bytes_per_s": self.memory_bandwidth_bytes_per_s,
            "flops": dict(self.flops),
            "fp16_acc16_flops": self.fp16_acc16_flops,
            "vector_fp32_flops": self.vector_fp32_flops or None,
            "tdp_watts": self.tdp_watts or None,
            "pcie_gen": self.pcie_gen,
            "pcie_lanes": self.pcie_lanes,
            "nvlink_bytes_per_s": self.nvlink_bytes_per_s or None,
            "form_factor": self.form_factor or None,
            "slot_width": self.slot_width,
            "power_connectors": self.power_connectors or None,
            "launch_year": self.launch_year,
            "launch_price_usd": self.launch_price_usd,
            "street_price_usd": self.street_price_usd,
            "street_price_date": self.street_price_date or None,
            "rental_usd_per_hour": self.rental_usd_per_hour,
            "aliases": list(self.aliases),
            "source": self.source,
            "retrieved": self.retrieved,
            "notes": self.notes,
        }


@dataclass(frozen=True)
class Link:
    """An interconnect: PCIe, NVLink, InfiniBand, Ethernet, Thunderbolt, Wi-Fi."""

    id: str
    name: str
    kind: str  # pcie | nvlink | nvswitch | infiniband | ethernet | roce | thunderbolt | usb4 | wifi
    bandwidth_bytes_per_s: float  # per direction
    latency_s: float
    source: str = ""
    retrieved: str = ""
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class Node:
    """One machine: ``count`` identical accelerators joined by ``intra_link``."""

    accelerator: Accelerator
    count: int = 1
    intra_link: Link | None = None  # between the node's accelerators (PCIe, NVLink, NVSwitch)
    host_memory_bytes: float | None = None
    host_memory_bandwidth_bytes_per_s: float | None = None
    name: str = ""

    @property
    def memory_bytes(self) -> float:
        return self.accelerator.memory_bytes * self.count


@dataclass(frozen=True)
class Cluster:
    """Nodes joined by a network. Homogeneous when ``nodes`` holds one entry repeated."""

    nodes: tuple[Node, ...]
    network: Link | None = None

    @cached_property
    def runs(self) -> tuple[tuple[Node, int], ...]:
        """``nodes`` as (node, how many in a row): 100,000 identical nodes are one run, so
        planners do work per kind of node, not per node (computed once per cluster)."""
        runs: list[list[Any]] = []
        for node in self.nodes:
            if runs and runs[-1][0] is node:
                runs[-1][1] += 1
            else:
                runs.append([node, 1])
        return tuple((node, count) for node, count in runs)

    @cached_property
    def accelerator_count(self) -> int:
        return sum(node.count * repeat for node, repeat in self.runs)


@dataclass(frozen=True)
class SystemPreset:
    """A named machine: DGX, Mac Studio, a seed-000 build."""

    id: str
    name: str
    accelerator_id: str
    accelerator_count: int
    intra_link_id: str | None
    network_link_id: str | None
    network_ports: int
    host_memory_bytes: float | None
    price_usd: float | None
    power_watts: float | None
    source: str
    retrieved: str
    aliases: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class Resolution:
    """What a typed name resolved to; ``alternatives`` lists other ids a family name matched."""

    query: str
    accelerator: Accelerator
    alternatives: tuple[str, ...] = ()

    @property
    def note(self) -> str:
        """A sentence for the user when the name was a family ("M3 Max"), else ''."""
        if not self.alternatives:
            return ""
        others = ", ".join(self.alternatives[:4]) + (" ..." if len(self.alternatives) > 4 else "")
        return (
            f"{self.query!r} names {len(self.alternatives) + 1} variants; using "
            f"{self.accelerator.id} (the catalog's default). Others: {others}."
        )
