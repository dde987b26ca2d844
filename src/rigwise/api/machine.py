"""``--on this-machine``: the probed machine as a cluster the planners take.

GPUs the catalog knows become a node of them (host RAM from the probe). With no known GPU, the
CPU is the device: its catalog row when the catalog has it, else a row built from the probe
(cores x clock x FMA width; channels x MT/s x 8 bytes), where any figure the probe could not read
comes from ``probe_cpu_defaults.csv`` and is named in ``assumptions``.
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, replace

from rigwise.catalog.loader import read_csv
from rigwise.errors import CatalogError
from rigwise.hardware import Accelerator, Cluster, Node, node_from_text
from rigwise.probe.backend import HardwareBackend
from rigwise.probe.report import CpuInfo, GpuInfo, MemoryInfo

THIS_MACHINE = "this-machine"
_DEFAULTS_FILE = "probe_cpu_defaults.csv"
_BYTES_PER_TRANSFER = 8  # one 64-bit DIMM channel (JEDEC JESD79-4/-5)


@dataclass(frozen=True)
class Machine:
    """The probed machine: the cluster to plan on, its description and what was assumed."""

    cluster: Cluster
    description: str
    assumptions: tuple[str, ...] = ()


def _default(key: str, isa: tuple[str, ...] = ()) -> float:
    for row in read_csv(_DEFAULTS_FILE):
        if row["key"] == key and (not row["isa"] or row["isa"] in isa):
            return float(row["value"])
    raise CatalogError(f"{_DEFAULTS_FILE}: no row for {key!r}.")


def _vendor(model: str) -> str:
    lowered = model.lower()
    return next((v for v in ("intel", "amd", "apple", "arm") if v in lowered), "cpu")


def cpu_device(cpu: CpuInfo, memory: MemoryInfo) -> tuple[Accelerator, tuple[str, ...]]:
    """This CPU and its RAM as a device, and the figures that were assumed."""
    from rigwise.probe.matching import find_accelerator

    known = find_accelerator(cpu.model)
    if known is not None and known.kind == "cpu":
        return replace(known, memory_bytes=memory.total_bytes), ()
    assumed: list[str] = []
    clock = cpu.base_clock_hz
    if not clock:
        clock = _default("base_clock_hz")
        assumed.append(f"CPU clock {clock / 1e9:.1f} GHz (not readable)")
    channels = memory.channels or _default("memory_channels")
    rate = memory.speed_mt_per_s or _default("memory_mt_per_s")
    if not memory.channels or not memory.speed_mt_per_s:
        assumed.append(f"RAM {channels:.0f} channels x {rate:.0f} MT/s (not readable)")
    flops = cpu.cores * clock * _default("fp32_flop_per_cycle_per_core", cpu.isa_features)
    device = Accelerator(
        id=THIS_MACHINE,
        name=f"{cpu.model} ({cpu.cores} cores, this machine)",
        vendor=_vendor(cpu.model),
        kind="cpu",
        memory_bytes=memory.total_bytes,
        memory_type=memory.kind or "DDR",
        memory_bandwidth_bytes_per_s=channels * rate * 1e6 * _BYTES_PER_TRANSFER,
        flops={"fp32": flops, "bf16": flops, "fp16": flops},
        vector_fp32_flops=flops,
        tdp_watts=0.0,
        source="rigwise probe of this machine; " + _DEFAULTS_FILE,
        notes="built from the probe",
    )
    return device, tuple(assumed)


def _gpu_node(gpus: tuple[GpuInfo, ...], memory: MemoryInfo) -> tuple[Node, str] | None:
    known = Counter(g.catalog_id for g in gpus if g.catalog_id)
    if not known:
        return None
    device, count = known.most_common(1)[0]
    text = f"{count}x {device}" if count > 1 else device
    return node_from_text(text, host_memory_bytes=memory.total_bytes), text


def machine_from(backend: HardwareBackend) -> Machine:
    """The machine ``backend`` describes (only CPU, memory and GPUs are read)."""
    memory = backend.memory()
    gpus = backend.gpus()
    found = _gpu_node(gpus, memory)
    if found is not None:
        node, text = found
        others = [g.name for g in gpus if (g.catalog_id or "?") not in text]
        notes = (f"not planned: {', '.join(others)}",) if others else ()
        return Machine(Cluster(nodes=(node,)), f"{text} (this machine)", notes)
    cpu = backend.cpu()
    device, assumed = cpu_device(cpu, memory)
    unknown = tuple(f"GPU {g.name} is not in the catalog" for g in gpus)
    node = Node(accelerator=device, count=1, host_memory_bytes=memory.total_bytes)
    return Machine(Cluster(nodes=(node,)), device.name, (*unknown, *assumed))


def measured_machine() -> Machine:
    """This machine's newest measured platform (memory bandwidth and matmul FLOP/s as `rigwise
    bench` measured them), with the run it came from and its age in ``assumptions``."""
    from rigwise.bench.measured import latest_measured_platform
    from rigwise.errors import InputError

    found = latest_measured_platform()
    if found is None:
        raise InputError(
            "No measured platform is stored for this machine.",
            hint="Run `rigwise bench --quick` on it: when no catalog platform stands for its "
            "CPU, the bench stores the measured one.",
        )
    device = found.accelerator
    node = Node(accelerator=device, count=1, host_memory_bytes=device.memory_bytes)
    return Machine(Cluster(nodes=(node,)), device.name, (found.describe(),))


@functools.cache
def this_machine() -> Machine:
    """This machine (or the fake one ``RIGWISE_FAKE_HARDWARE`` describes), probed once."""
    from rigwise.probe import default_backend

    return machine_from(default_backend())
