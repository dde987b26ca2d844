"""How a machine is measured for the grid: its inventory from ``rigwise.probe`` and its speed
from ``rigwise.bench`` (quick matmul and memory groups), or, where those are not installed, a
small numpy benchmark of its own.

The same ``ProbeFacts`` runs twice for every joining machine: once by the agent, whose figures
are its claim, and once by the coordinator as a Ray task on the machine's own Ray worker
(``rigwise.grid.verify``), whose figures decide admission.
"""

from __future__ import annotations

import importlib
import os
import shutil
import socket
import time
from typing import Any

import psutil

from rigwise.grid.policy import GpuFacts, MachineFacts


def _measure_flops(size: int = 512, repeats: int = 5) -> float:
    import numpy as np

    a = np.random.default_rng(0).random((size, size), dtype=np.float32)
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        a @ a
        best = min(best, time.perf_counter() - started)
    return 2.0 * size**3 / best  # a square matmul does 2 n^3 FLOPs


def _measure_copy_bandwidth(size_bytes: int = 128_000_000) -> float:
    import numpy as np

    source = np.ones(size_bytes // 8)
    target = np.empty_like(source)
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        np.copyto(target, source)
        best = min(best, time.perf_counter() - started)
    return 2.0 * size_bytes / best  # a copy reads and writes every byte


def nvlink_domains(topology: tuple[tuple[str, ...], ...]) -> list[str | None]:
    """Per GPU, the NVLink domain it belongs to (GPUs joined by ``NV#`` entries of the
    ``nvidia-smi topo -m`` matrix, transitively), or None for a GPU with no NVLink."""
    parent = list(range(len(topology)))

    def root(index: int) -> int:
        while parent[index] != index:
            index = parent[index]
        return index

    linked: set[int] = set()
    for i, row in enumerate(topology):
        for j, entry in enumerate(row):
            if i != j and entry.upper().startswith("NV"):
                parent[root(i)] = root(j)
                linked.update((i, j))
    return [f"nv{root(i)}" if i in linked else None for i in range(len(topology))]


class ProbeFacts:
    """The machine as ``rigwise.probe`` sees it, verified by ``rigwise.bench`` (quick matmul
    and memory groups); where those are not installed, by the agent's own small benchmark."""

    def __init__(
        self,
        site: str = "default",
        switch: str = "default",
        disk: str = ".",
        backend: Any = None,
        storage: str = "",
    ) -> None:
        # a storage node's free disk is measured where its datasets will go
        self.site, self.switch, self.backend = site, switch, backend
        self.disk = storage or disk
        self.storage = os.path.abspath(storage) if storage else ""

    def _report(self) -> Any:
        try:
            probe = importlib.import_module("rigwise.probe").probe
        except (ImportError, AttributeError):
            return None
        return probe(self.backend)

    def _bench(self) -> tuple[float, float]:
        """(FLOP/s, memory B/s): the sum over devices of each one's best matmul, and the best
        measured bandwidth; the agent's own numpy figures when no bench is installed."""
        try:
            run_bench = importlib.import_module("rigwise.bench").run_bench
            report = run_bench(
                quick=True, only=["matmul", "memory"], backend=self.backend, save=False
            )
        except (ImportError, AttributeError):
            return _measure_flops(), _measure_copy_bandwidth()
        best: dict[str, float] = {}
        bandwidth = 0.0
        for item in report.measurements:
            if item.unit == "FLOP/s":
                best[item.device] = max(best.get(item.device, 0.0), item.value)
            elif item.unit == "B/s" and item.device == "cpu":
                bandwidth = max(bandwidth, item.value)
        flops = sum(best.values()) or _measure_flops()
        return flops, bandwidth or _measure_copy_bandwidth()

    def facts(self) -> MachineFacts:
        report = self._report()
        flops, bandwidth = self._bench()
        gpus: tuple[GpuFacts, ...] = ()
        cores = psutil.cpu_count(logical=False) or os.cpu_count() or 1
        memory, numa = float(psutil.virtual_memory().total), 1
        if report is not None:
            domains = nvlink_domains(report.gpu_topology)
            domains += [None] * (len(report.gpus) - len(domains))
            gpus = tuple(
                GpuFacts(gpu.name, float(gpu.memory_bytes), gpu.catalog_id, domain)
                for gpu, domain in zip(report.gpus, domains, strict=False)
            )
            cores, numa = report.cpu.cores, report.cpu.numa_nodes
            memory = float(report.memory.total_bytes)
        return MachineFacts(
            hostname=socket.gethostname(),
            cpu_cores=cores,
            memory_bytes=memory,
            gpus=gpus,
            disk_free_bytes=float(shutil.disk_usage(self.disk).free),
            network_bytes_per_s=0.0,
            measured_flops=flops,
            measured_memory_bandwidth_bytes_per_s=bandwidth,
            numa_nodes=numa,
            site=self.site,
            switch=self.switch,
            disk_path=os.path.abspath(self.disk),
            storage_path=self.storage,
        )
