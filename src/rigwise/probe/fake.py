"""A fake machine described in YAML or JSON, so probe, bench and monitor run without hardware.

Set ``RIGWISE_FAKE_HARDWARE=/path/to/machine.yaml`` and ``rigwise probe`` describes that machine
instead of this one (docs/probe.md shows the format). Sizes may be numbers (bytes) or strings
("24GB"). A GPU may carry ``measured:`` figures that ``rigwise bench`` reports as if it had
measured them, so calibration can be exercised without a GPU.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, field_validator

from rigwise.errors import InputError, shown_value
from rigwise.file_model import FileModel
from rigwise.probe.backend import GpuSample
from rigwise.probe.matching import catalog_id
from rigwise.probe.report import (
    CpuInfo,
    DiskInfo,
    GpuInfo,
    MemoryInfo,
    NetworkInterface,
    PcieLink,
    SoftwareInfo,
)
from rigwise.units import parse_bytes

ENV_VAR = "RIGWISE_FAKE_HARDWARE"
MAX_GPUS = 1024  # per fake machine (and disks, NICs): a node has at most a few dozen
MAX_COUNT = 1_048_576
MAX_WATTS = 1e6


def _bytes(value: Any) -> float:
    try:
        return parse_bytes(value) if isinstance(value, str | int | float) else float(value)
    except (InputError, TypeError) as exc:  # pydantic reports ValueErrors with the field path
        raise ValueError(str(exc)) from exc


def _sample_fields(value: dict[str, float]) -> dict[str, float]:
    known = {f.name for f in dataclasses.fields(GpuSample)} - {"index", "name"}
    unknown = sorted(set(value) - known)
    if unknown:
        raise ValueError(f"unknown sample field(s) {unknown}; known: {sorted(known)}")
    for key, number in value.items():  # served as-is to Prometheus: power -5 W, utilization 7
        top = 1.0 if key.endswith("_ratio") else math.inf
        if not 0 <= number <= top or math.isinf(number):
            bounds = "from 0 to 1" if top == 1.0 else "finite and >= 0"
            raise ValueError(f"{key} = {number:g} must be {bounds}")
    return value


def _measured_figures(value: dict[str, float]) -> dict[str, float]:
    bad = [f"{key} = {number:g}" for key, number in value.items() if not 0 < number < math.inf]
    if bad:  # a bench reported a matmul of -1e14 FLOP/s as measured
        raise ValueError(f"measured figures must be finite and > 0 ({bad[0]})")
    return value


class FakeCpu(FileModel):
    model: str = "Fake CPU"
    cores: int = Field(default=8, ge=1, le=MAX_COUNT)
    threads: int = Field(default=16, ge=1, le=MAX_COUNT)
    numa_nodes: int = Field(default=1, ge=1, le=MAX_COUNT)
    isa_features: list[str] = Field(default_factory=list)


class FakePcie(FileModel):
    current_gen: int | None = Field(None, ge=1, le=16)
    max_gen: int | None = Field(None, ge=1, le=16)
    current_width: int | None = Field(None, ge=1, le=64)
    max_width: int | None = Field(None, ge=1, le=64)


class FakeGpu(FileModel):
    name: str = Field(min_length=1, max_length=200)
    memory: float = Field(description="bytes, or a size string such as '24GB'")
    pcie: FakePcie | None = None
    power_limit_watts: float | None = Field(None, gt=0, le=MAX_WATTS)
    power_default_limit_watts: float | None = Field(None, gt=0, le=MAX_WATTS)
    numa_node: int | None = Field(None, ge=0, le=MAX_COUNT)
    nvlink_links_active: int = Field(0, ge=0, le=MAX_COUNT)
    performance_state: int | None = Field(None, ge=0, le=15)  # NVML's P0 to P15
    # GpuSample fields for `rigwise monitor`; bench figures, keyed by measurement name
    sample: dict[str, float] = Field(default_factory=dict)
    measured: dict[str, float] = Field(default_factory=dict)

    _parse_memory = field_validator("memory", mode="before")(_bytes)
    _check_sample = field_validator("sample")(_sample_fields)
    _check_measured = field_validator("measured")(_measured_figures)


class FakeDisk(FileModel):
    name: str
    size: float
    kind: str = "nvme"
    model: str = ""

    _parse_size = field_validator("size", mode="before")(_bytes)


class FakeNic(FileModel):
    name: str
    up: bool = True
    speed_bits_per_s: float | None = Field(None, gt=0, le=1e15)


class FakeMachine(FileModel):
    cpu: FakeCpu = FakeCpu()
    memory: float = 64e9
    # bounded: the topology is GPUs x GPUs (30,000 GPUs in a 1 MB file took > 5 GB and minutes)
    gpus: list[FakeGpu] = Field(default_factory=list, max_length=MAX_GPUS)
    topology: list[Annotated[list[str], Field(max_length=MAX_GPUS)]] | None = Field(
        None, max_length=MAX_GPUS
    )
    disks: list[FakeDisk] = Field(default_factory=list, max_length=MAX_GPUS)
    network: list[FakeNic] = Field(default_factory=list, max_length=MAX_GPUS)
    driver_version: str | None = None
    cuda_driver_version: str | None = None

    _parse_memory = field_validator("memory", mode="before")(_bytes)


def load_fake_machine(path: str | Path) -> FakeMachine:
    from rigwise.validate_input import load_json, load_yaml, read_user_text, validated

    file = Path(path)
    where = f"The fake hardware file {shown_value(str(file), 240)}"
    try:
        text = read_user_text(file, "fake hardware file", max_bytes=1024 * 1024)
    except InputError as exc:
        hint = f"Point {ENV_VAR} at a YAML or JSON file (see docs/probe.md) or unset it."
        raise InputError(exc.message, hint=hint) from None
    data = load_json(text, where) if file.suffix == ".json" else load_yaml(text, where)
    hint = "Fix the named field; docs/probe.md shows the format."
    return validated(FakeMachine, data or {}, where, hint)


class FakeBackend:
    """A described machine; ``FakeBackend.from_env()`` reads ``RIGWISE_FAKE_HARDWARE``."""

    name = "fake"

    def __init__(self, machine: FakeMachine | Mapping[str, Any] | None = None) -> None:
        if machine is None or isinstance(machine, Mapping):
            machine = FakeMachine.model_validate(dict(machine or {}))
        self.machine = machine

    @classmethod
    def from_env(cls) -> FakeBackend | None:
        path = os.environ.get(ENV_VAR)
        return cls(load_fake_machine(path)) if path else None

    def cpu(self) -> CpuInfo:
        cpu = self.machine.cpu
        return CpuInfo(
            model=cpu.model,
            cores=cpu.cores,
            threads=cpu.threads,
            numa_nodes=cpu.numa_nodes,
            isa_features=tuple(cpu.isa_features),
        )

    def memory(self) -> MemoryInfo:
        return MemoryInfo(total_bytes=self.machine.memory)

    def gpus(self) -> tuple[GpuInfo, ...]:
        return tuple(
            GpuInfo(
                index=index,
                name=gpu.name,
                vendor="nvidia",
                memory_bytes=gpu.memory,
                catalog_id=catalog_id(gpu.name),
                pci_bus_id=f"00000000:{index + 1:02x}:00.0",
                pcie=PcieLink(**gpu.pcie.model_dump()) if gpu.pcie else None,
                power_limit_watts=gpu.power_limit_watts,
                power_default_limit_watts=gpu.power_default_limit_watts,
                nvlink_links_active=gpu.nvlink_links_active,
                numa_node=gpu.numa_node,
                performance_state=gpu.performance_state,
            )
            for index, gpu in enumerate(self.machine.gpus)
        )

    def gpu_topology(self) -> tuple[tuple[str, ...], ...]:
        if self.machine.topology is not None:
            return tuple(tuple(row) for row in self.machine.topology)
        count = len(self.machine.gpus)
        return tuple(tuple("X" if i == j else "PHB" for j in range(count)) for i in range(count))

    def disks(self) -> tuple[DiskInfo, ...]:
        return tuple(DiskInfo(d.name, d.size, d.kind, d.model) for d in self.machine.disks)

    def network(self) -> tuple[NetworkInterface, ...]:
        return tuple(
            NetworkInterface(n.name, n.up, n.speed_bits_per_s) for n in self.machine.network
        )

    def software(self) -> SoftwareInfo:
        return SoftwareInfo(
            os="fake",
            kernel="fake",
            python="fake",
            driver_version=self.machine.driver_version,
            cuda_driver_version=self.machine.cuda_driver_version,
        )

    def gpu_samples(self) -> tuple[GpuSample, ...]:
        return tuple(
            GpuSample(index=i, name=gpu.name, memory_total_bytes=gpu.memory, **gpu.sample)
            for i, gpu in enumerate(self.machine.gpus)
        )

    def notes(self) -> tuple[str, ...]:
        return (f"fake hardware ({ENV_VAR} is set): this is not the machine you are on",)

    def measured(self, gpu_index: int) -> dict[str, float]:
        """Bench figures the description claims for a GPU (what a real bench would measure)."""
        return dict(self.machine.gpus[gpu_index].measured)
