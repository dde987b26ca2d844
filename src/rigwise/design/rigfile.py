"""Rig files: a described machine (YAML) -> a validated, resolved ``Rig``.

The file format (documented in docs/build.md and catalog/SCHEMA.md):

    name: 4x RTX 3090 on X10DRG-Q
    motherboard: x10drg-q
    cpu: xeon-e5-2699-v4
    cpu_count: 2
    ram: {module: ddr4-lrdimm-64gb-2400, count: 8}
    psu: {name: corsair-ax1600i, count: 1}
    case: supermicro-7048gr-chassis
    cooling: [air-tower-cpu]
    circuit: us-120v-15a
    task: infer                      # infer | train (RAM vs VRAM rule)
    gpus:
      - {name: rtx-3090, slot: 2}
      - {name: rtx-3090, slots: [4, 6, 8]}      # several of the same card
      - {name: rtx-3090, slot: 1, riser: pcie4-x16-riser-300}
    nvlink: [{bridge: nvlink-3090-4slot, gpus: [0, 1]}]
    storage: [{name: nvme-gen4-2tb, count: 1, attach: cpu}]
    network: [{name: intel-x540-t2, slot: 7}]

pydantic reads the file (clear errors naming file, key and fix); ``resolve_rig`` turns names into
catalog parts (UnknownNameError with suggestions) and the GPUs into ``Accelerator`` objects.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, ValidationError, model_validator

from rigwise.design import parts
from rigwise.errors import InputError, shown_value, validation_message
from rigwise.file_model import FileModel
from rigwise.hardware import Accelerator

GpuLookup = Callable[[str], Accelerator]


# One machine: bounds far above any real rig keep a malformed file from making unbounded work.
_MAX_ITEMS = 64  # GPUs, drives, NICs, RAM modules, PSUs listed or counted in one rig
_MAX_WATTS = 100_000.0
_Name = Annotated[str, Field(min_length=1, max_length=200)]


class _Model(FileModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=True, allow_inf_nan=False
    )


class RamSpec(_Model):
    module: _Name
    count: int = Field(ge=1, le=_MAX_ITEMS)


class PsuSpec(_Model):
    name: _Name
    count: int = Field(default=1, ge=1, le=_MAX_ITEMS)


class GpuSpec(_Model):
    name: _Name
    slot: int | None = Field(default=None, ge=0, le=_MAX_ITEMS)
    slots: list[int] | None = Field(default=None, min_length=1, max_length=_MAX_ITEMS)
    riser: str | None = None
    water_block: bool = False
    power_limit_w: float | None = Field(default=None, gt=0, le=_MAX_WATTS)
    slot_width: float | None = Field(default=None, gt=0, le=_MAX_ITEMS)
    tdp_w: float | None = Field(default=None, gt=0, le=_MAX_WATTS)
    power_connectors: str | None = None

    @model_validator(mode="after")
    def _one_placement(self) -> GpuSpec:
        if (self.slot is None) == (self.slots is None):
            raise ValueError("give exactly one of 'slot: N' or 'slots: [N, M, ...]'")
        return self


class NvlinkSpec(_Model):
    bridge: str
    gpus: tuple[int, int]


class StorageSpec(_Model):
    name: _Name
    count: int = Field(default=1, ge=1, le=_MAX_ITEMS)
    attach: Literal["cpu", "chipset", "sata"] | int = "cpu"


class NetworkSpec(_Model):
    name: str
    slot: int | Literal["onboard"] = "onboard"


class RigFile(_Model):
    name: str = "rig"
    motherboard: str
    cpu: str
    cpu_count: int = Field(default=1, ge=1, le=16)
    ram: RamSpec
    psu: PsuSpec
    case: str | None = None
    circuit: str = "us-120v-15a"
    task: Literal["infer", "serve", "finetune", "train"] = "infer"
    used: bool = True
    gpus: list[GpuSpec] = Field(default_factory=list, max_length=_MAX_ITEMS)
    nvlink: list[NvlinkSpec] = Field(default_factory=list, max_length=_MAX_ITEMS)
    storage: list[StorageSpec] = Field(default_factory=list, max_length=_MAX_ITEMS)
    network: list[NetworkSpec] = Field(default_factory=list, max_length=_MAX_ITEMS)
    cooling: list[str] = Field(default_factory=list, max_length=_MAX_ITEMS)
    fans: int = Field(default=3, ge=0, le=1000)


@dataclass(frozen=True)
class PlacedGpu:
    index: int
    accelerator: Accelerator
    slot: int
    riser: parts.SimplePart | None
    water_block: bool
    power_limit_watts: float
    slot_width: float
    power_connectors: str

    @property
    def lanes(self) -> int:
        return self.accelerator.pcie_lanes or 16

    @property
    def label(self) -> str:
        return f"GPU {self.index} ({self.accelerator.id}, slot {self.slot})"


@dataclass(frozen=True)
class Rig:
    """A rig file with every name resolved to a catalog part."""

    name: str
    motherboard: parts.Motherboard
    cpu: parts.Cpu
    cpu_count: int
    ram: parts.RamModule
    ram_count: int
    psu: parts.Psu
    psu_count: int
    case: parts.Case | None
    cooling: tuple[parts.SimplePart, ...]
    circuit: dict[str, str]
    task: str
    used: bool
    gpus: tuple[PlacedGpu, ...]
    nvlink: tuple[tuple[parts.SimplePart, int, int], ...]
    storage: tuple[tuple[parts.SimplePart, int, str], ...]
    network: tuple[tuple[parts.SimplePart, str], ...]
    fans: int

    @property
    def ram_bytes(self) -> float:
        return self.ram.module_bytes * self.ram_count

    @property
    def vram_bytes(self) -> float:
        return sum(g.accelerator.memory_bytes for g in self.gpus)


def _format_validation(error: ValidationError, where: str) -> InputError:
    return InputError(
        validation_message(error, where),
        hint="See docs/build.md (rig file format) for the keys and an example.",
    )


def parse_rig(data: Any, where: str = "rig") -> RigFile:
    """A parsed mapping -> RigFile; InputError naming the key and the fix."""
    if not isinstance(data, dict):
        raise InputError(f"{where}: a rig file is a YAML mapping (name:, motherboard:, gpus: ...).")
    try:
        return RigFile.model_validate(data)
    except ValidationError as exc:
        raise _format_validation(exc, where) from None


def load_rig_file(path: str | Path) -> RigFile:
    """A rig file: bounded read (1 MiB, UTF-8), safe YAML (no aliases, bounded nesting)."""
    from rigwise.validate_input import load_yaml, read_user_text

    text = read_user_text(path, "rig file", max_bytes=1024 * 1024)
    where = shown_value(str(path), 240)
    return parse_rig(load_yaml(text, where), where)


def _default_lookup(name: str) -> Accelerator:
    from rigwise.hardware import get_accelerator

    result: Accelerator = get_accelerator(name)
    return result


def _check_power_limit(spec: GpuSpec, accelerator: Accelerator) -> None:
    """A ``power_limit_w`` the card refuses (as ``nvidia-smi -pl`` does) is bad input, as
    ``--power-limit`` is: planned as the card's draw, 1 W passed every power check."""
    from dataclasses import replace

    from rigwise.hardware.power_limits import settable_range

    watts = spec.power_limit_w
    card = replace(accelerator, tdp_watts=spec.tdp_w) if spec.tdp_w else accelerator
    found = settable_range(card)
    if watts is None or found is None or found.min_watts <= watts <= found.max_watts:
        return
    span = f"{found.min_watts:g}-{found.max_watts:g} W"
    raise InputError(
        f"GPU {spec.name!r}: power_limit_w {watts:g} is outside what {accelerator.id} accepts: "
        f"{span} ({found.basis}).",
        hint=f"Give power_limit_w within {span}, or leave it out for the stock limit.",
    )


def _place_gpus(specs: list[GpuSpec], lookup: GpuLookup) -> tuple[PlacedGpu, ...]:
    placed: list[PlacedGpu] = []
    for spec in specs:
        accelerator = lookup(spec.name)
        _check_power_limit(spec, accelerator)
        riser = parts.get_part("risers", spec.riser) if spec.riser else None
        for slot in spec.slots if spec.slots is not None else [spec.slot or 0]:
            width = spec.slot_width or accelerator.slot_width or 2.0
            placed.append(
                PlacedGpu(
                    index=len(placed),
                    accelerator=accelerator,
                    slot=slot,
                    riser=riser,
                    water_block=spec.water_block,
                    power_limit_watts=spec.power_limit_w or spec.tdp_w or accelerator.tdp_watts,
                    slot_width=1.0 if spec.water_block else width,
                    power_connectors=spec.power_connectors or accelerator.power_connectors,
                )
            )
    return tuple(placed)


def resolve_rig(rig_file: RigFile, gpu_lookup: GpuLookup | None = None) -> Rig:
    """Resolve every name; unknown names raise UnknownNameError with suggestions."""
    lookup = gpu_lookup or _default_lookup
    circuit = parts.circuit_id(rig_file.circuit)
    return Rig(
        name=rig_file.name,
        motherboard=parts.get_part("motherboard", rig_file.motherboard),
        cpu=parts.get_part("cpu", rig_file.cpu),
        cpu_count=rig_file.cpu_count,
        ram=parts.get_part("ram", rig_file.ram.module),
        ram_count=rig_file.ram.count,
        psu=parts.get_part("psu", rig_file.psu.name),
        psu_count=rig_file.psu.count,
        case=parts.get_part("case", rig_file.case) if rig_file.case else None,
        cooling=tuple(parts.get_part("cooling", c) for c in rig_file.cooling),
        circuit=parts.circuits()[circuit],
        task=rig_file.task,
        used=rig_file.used,
        gpus=_place_gpus(rig_file.gpus, lookup),
        nvlink=tuple(
            (parts.get_part("nvlink_bridges", n.bridge), n.gpus[0], n.gpus[1])
            for n in rig_file.nvlink
        ),
        storage=tuple(
            (parts.get_part("storage", s.name), s.count, str(s.attach)) for s in rig_file.storage
        ),
        network=tuple(
            (parts.get_part("network_cards", n.name), str(n.slot)) for n in rig_file.network
        ),
        fans=rig_file.fans,
    )


def load_rig(path: str | Path, gpu_lookup: GpuLookup | None = None) -> Rig:
    return resolve_rig(load_rig_file(path), gpu_lookup)
