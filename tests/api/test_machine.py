"""--on this-machine: the probed CPU and RAM as a device when no GPU is known."""

from __future__ import annotations

from rigwise.api.machine import cpu_device, machine_from
from rigwise.probe import FakeBackend
from rigwise.probe.report import CpuInfo, MemoryInfo


def test_an_unknown_cpu_is_built_from_the_probe_with_named_assumptions() -> None:
    cpu = CpuInfo(model="Some CPU", cores=8, threads=16, numa_nodes=1, isa_features=("avx2", "fma"))
    device, assumed = cpu_device(cpu, MemoryInfo(total_bytes=64e9, speed_mt_per_s=6000, channels=2))
    assert device.kind == "cpu" and device.memory_bytes == 64e9
    assert device.memory_bandwidth_bytes_per_s == 2 * 6000e6 * 8
    assert device.flops["fp32"] == 8 * 2.0e9 * 32  # clock assumed, FMA width from the flags
    assert assumed == ("CPU clock 2.0 GHz (not readable)",)


def test_a_catalog_cpu_keeps_its_row_with_the_probed_ram() -> None:
    cpu = CpuInfo(model="AMD Ryzen 9 5950X", cores=16, threads=32, numa_nodes=1)
    device, assumed = cpu_device(cpu, MemoryInfo(total_bytes=128e9))
    assert device.id == "ryzen-9-5950x-ddr4-3200" and device.memory_bytes == 128e9
    assert assumed == ()


def test_known_gpus_make_the_node() -> None:
    gpu = {"name": "NVIDIA GeForce RTX 3090", "memory": "24GB"}
    backend = FakeBackend({"cpu": {"model": "x", "cores": 4}, "memory": "64GB", "gpus": [gpu]})
    machine = machine_from(backend)
    node = machine.cluster.nodes[0]
    assert node.accelerator.id == "rtx-3090" and node.host_memory_bytes == 64e9
