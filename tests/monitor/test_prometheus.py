"""`rigwise monitor`'s endpoint, scraped over HTTP and read back with prometheus_client's parser."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from rigwise.monitor import snapshot
from rigwise.monitor.live import table
from rigwise.monitor.prometheus import GPU_GAUGES, HOST_GAUGES, render, serve
from rigwise.probe import FakeBackend
from rigwise.probe.fake import load_fake_machine
from rigwise.probe.local import LocalBackend

FAKE = Path(__file__).parents[1] / "probe" / "fake_degraded.yaml"
DASHBOARD = Path(__file__).parents[2] / "docs" / "grafana-dashboard.json"


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def test_endpoint_serves_gpu_and_host_metrics_on_a_free_port() -> None:
    endpoint = serve(FakeBackend(load_fake_machine(FAKE)), port=0, host="127.0.0.1")
    try:
        assert endpoint.port > 0
        with urllib.request.urlopen(endpoint.url, timeout=10) as response:
            text = response.read().decode()
    finally:
        endpoint.stop()
    samples = _samples(text)
    gpu1 = (("gpu", "1"), ("name", "NVIDIA GeForce RTX 4090"))
    assert samples[("rigwise_gpu_power_watts", gpu1)] == 410.5
    assert samples[("rigwise_gpu_utilization_ratio", gpu1)] == 0.9
    assert samples[("rigwise_gpu_memory_used_bytes", gpu1)] == 2.0e10
    gpu0 = (("gpu", "0"), ("name", "NVIDIA GeForce RTX 4090"))
    assert samples[("rigwise_gpu_temperature_celsius", gpu0)] == 61
    assert samples[("rigwise_gpu_memory_total_bytes", gpu0)] == 24e9
    assert samples[("rigwise_host_memory_total_bytes", ())] > 0
    assert ("rigwise_host_network_sent_bytes_total", ()) in samples  # counters get _total


def test_real_host_metrics_without_gpus() -> None:
    backend = LocalBackend(sources=[], notes=[])
    samples = _samples(render(backend))
    import psutil

    assert samples[("rigwise_host_memory_total_bytes", ())] == psutil.virtual_memory().total
    assert samples[("rigwise_host_cpu_count", ())] == psutil.cpu_count()
    assert not any(name.startswith("rigwise_gpu_") for name, _ in samples)


def test_snapshot_json_and_live_table() -> None:
    backend = FakeBackend(load_fake_machine(FAKE))
    reading = snapshot(backend)
    data = json.loads(json.dumps(reading.to_dict()))
    assert [g["index"] for g in data["gpus"]] == [0, 1]
    from rich.console import Console

    console = Console(record=True, width=160)
    console.print(table(reading))
    text = console.export_text()
    assert "gpu1 NVIDIA GeForce RTX 4090" in text and "90%" in text and "410" in text


def test_busy_port_is_a_clear_error() -> None:
    from rigwise.errors import ProbeError

    first = serve(LocalBackend(sources=[], notes=[]), port=0)
    try:
        with pytest.raises(ProbeError, match="--port"):
            serve(LocalBackend(sources=[], notes=[]), port=first.port)
    finally:
        first.stop()


def test_grafana_dashboard_charts_only_metrics_we_serve() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    served = {name for name, _ in GPU_GAUGES.values()} | {name for name, _ in HOST_GAUGES.values()}
    served |= {
        f"{name}_total"
        for name in (
            "rigwise_host_network_sent_bytes",
            "rigwise_host_network_received_bytes",
            "rigwise_host_disk_read_bytes",
            "rigwise_host_disk_written_bytes",
        )
    }
    expressions = [t["expr"] for panel in dashboard["panels"] for t in panel.get("targets", [])]
    assert expressions
    import re

    used = {m for expr in expressions for m in re.findall(r"rigwise_[a-z0-9_]+", expr)}
    assert used <= served, used - served


@pytest.mark.parametrize("host", ["bogus.invalid", "10.255.255.1"])
def test_an_address_that_is_not_this_machines_says_so(host: str) -> None:
    # before: 'Pick another port with --port, or stop what is using it.' for a bad --host
    from rigwise.errors import ProbeError

    with pytest.raises(ProbeError) as caught:
        serve(FakeBackend(), port=0, host=host).stop()
    assert "Give an address of this machine" in str(caught.value.hint)
