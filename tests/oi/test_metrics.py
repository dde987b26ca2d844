"""Prometheus metrics of an O.I. store through the monitor package's adapter."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("prometheus_client")

from rigwise.oi.constants import load_constants
from rigwise.oi.faults import parse_fault
from rigwise.oi.metrics import render, serve
from rigwise.oi.runner import run_sim
from rigwise.oi.store import Store


def _store(tmp_path: Path, faults: tuple[str, ...]) -> str:
    path = tmp_path / "oi.sqlite3"
    store = Store(path)
    run_sim(
        store,
        load_constants(),
        duration_s=14 * 3600,
        period_s=60.0,
        faults=tuple(parse_fault(f) for f in faults),
        experiments=False,
    )
    store.close()
    return str(path)


def test_metrics_of_a_healthy_store(tmp_path: Path) -> None:
    text = render(_store(tmp_path, ()))
    assert "rigwise_oi_health_index " in text
    assert "rigwise_oi_temperature_celsius 3" in text  # ~37 degC
    assert "rigwise_oi_exchanges_total 1.0" in text
    assert "rigwise_oi_alarm_latched{" not in text


def test_metrics_show_the_latched_alarm_and_no_health(tmp_path: Path) -> None:
    path = _store(tmp_path, ("comms_loss@13h+10m",))
    text = render(path)
    assert 'rigwise_oi_alarm_latched{device="bus",kind="comms_loss"} 1.0' in text
    assert "rigwise_oi_health_index " not in text
    endpoint = serve(path, 0)
    try:
        with urllib.request.urlopen(endpoint.url, timeout=10) as response:
            assert b"rigwise_oi_alarm_latched" in response.read()
    finally:
        endpoint.stop()
