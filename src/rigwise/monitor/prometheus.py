"""The Prometheus endpoint: the only module that imports ``prometheus_client`` (lazily).

A custom collector reads a fresh ``Snapshot`` on every scrape, so there is no sampling thread
and values are never stale. Metric names follow Prometheus naming practice (base units,
``_bytes``, ``_celsius``, ``_watts``, ``_hertz``, ``_ratio``, ``_total`` for counters;
prometheus.io/docs/practices/naming). docs/grafana-dashboard.json charts them.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rigwise.errors import ProbeError
from rigwise.monitor.metrics import snapshot
from rigwise.probe.backend import HardwareBackend

# GpuSample field -> (metric name, help)
GPU_GAUGES = {
    "utilization_ratio": ("rigwise_gpu_utilization_ratio", "Share of time a kernel ran (0-1)"),
    "memory_used_bytes": ("rigwise_gpu_memory_used_bytes", "GPU memory in use"),
    "memory_total_bytes": ("rigwise_gpu_memory_total_bytes", "GPU memory size"),
    "power_watts": ("rigwise_gpu_power_watts", "Board power draw"),
    "temperature_celsius": ("rigwise_gpu_temperature_celsius", "GPU core temperature"),
    "sm_clock_hz": ("rigwise_gpu_sm_clock_hertz", "SM (graphics) clock"),
    "memory_clock_hz": ("rigwise_gpu_memory_clock_hertz", "Memory clock"),
    "pcie_tx_bytes_per_s": ("rigwise_gpu_pcie_tx_bytes_per_second", "PCIe transmit rate"),
    "pcie_rx_bytes_per_s": ("rigwise_gpu_pcie_rx_bytes_per_second", "PCIe receive rate"),
    "nvlink_tx_bytes_per_s": ("rigwise_gpu_nvlink_tx_bytes_per_second", "NVLink transmit rate"),
    "nvlink_rx_bytes_per_s": ("rigwise_gpu_nvlink_rx_bytes_per_second", "NVLink receive rate"),
}
HOST_GAUGES = {
    "cpu_utilization_ratio": ("rigwise_host_cpu_utilization_ratio", "CPU busy share (0-1)"),
    "cpu_count": ("rigwise_host_cpu_count", "Logical CPUs"),
    "load_average_1m": ("rigwise_host_load_average_1m", "1-minute load average"),
    "memory_used_bytes": ("rigwise_host_memory_used_bytes", "RAM in use"),
    "memory_total_bytes": ("rigwise_host_memory_total_bytes", "RAM size"),
    "swap_used_bytes": ("rigwise_host_swap_used_bytes", "Swap in use"),
}
HOST_COUNTERS = {
    "network_sent_bytes": ("rigwise_host_network_sent_bytes", "Bytes sent, all interfaces"),
    "network_received_bytes": ("rigwise_host_network_received_bytes", "Bytes received"),
    "disk_read_bytes": ("rigwise_host_disk_read_bytes", "Bytes read, all disks"),
    "disk_written_bytes": ("rigwise_host_disk_written_bytes", "Bytes written, all disks"),
}


def _client() -> Any:
    try:
        import prometheus_client
    except ImportError as exc:
        raise ProbeError(
            "prometheus-client is not installed.", hint="pip install 'rigwise[monitor]'"
        ) from exc
    return prometheus_client


class SnapshotCollector:
    """A prometheus_client collector over a hardware backend."""

    def __init__(self, backend: HardwareBackend) -> None:
        self._backend = backend

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        reading = snapshot(self._backend)
        for field, (name, help_text) in GPU_GAUGES.items():
            family = GaugeMetricFamily(name, help_text, labels=["gpu", "name"])
            for gpu in reading.gpus:
                value = getattr(gpu, field)
                if value is not None:
                    family.add_metric([str(gpu.index), gpu.name], float(value))
            yield family
        for field, (name, help_text) in HOST_GAUGES.items():
            value = getattr(reading.host, field)
            if value is not None:
                yield GaugeMetricFamily(name, help_text, value=float(value))
        for field, (name, help_text) in HOST_COUNTERS.items():
            value = getattr(reading.host, field)
            if value is not None:
                yield CounterMetricFamily(name, help_text, value=float(value))


@dataclass
class Endpoint:
    host: str
    port: int
    server: Any
    thread: Any

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/metrics"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def serve_collector(collector: Any, port: int, host: str, what: str, hint: str) -> Endpoint:
    """Serve one collector's /metrics in a background thread; ``port=0`` picks a free port."""
    client = _client()
    registry = client.CollectorRegistry()
    registry.register(collector)
    try:
        server, thread = client.start_http_server(port, addr=host, registry=registry)
    except OSError as exc:
        if isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL:
            # the address, not the port: 'Pick another port' sent people the wrong way
            hint = "Give an address of this machine, e.g. 127.0.0.1 (or 0.0.0.0 for every one)."
        raise ProbeError(
            f"Cannot serve {what} on {host}:{port} ({exc.strerror}).", hint=hint
        ) from exc
    return Endpoint(host, int(server.server_address[1]), server, thread)


def render_collector(collector: Any) -> str:
    """The exposition text one scrape of ``collector`` would return."""
    client = _client()
    registry = client.CollectorRegistry()
    registry.register(collector)
    return str(client.generate_latest(registry).decode())


def serve(backend: HardwareBackend, port: int = 9835, host: str = "127.0.0.1") -> Endpoint:
    """Start serving /metrics in a background thread; ``port=0`` picks a free port."""
    return serve_collector(
        SnapshotCollector(backend), port, host, "metrics",
        "Pick another port with --port, or stop what is using it.",
    )  # fmt: skip


def render(backend: HardwareBackend) -> str:
    """The exposition text one scrape would return (for tests and `--once`)."""
    return render_collector(SnapshotCollector(backend))
