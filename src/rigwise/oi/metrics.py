"""Prometheus metrics of an O.I. store, served the way ``rigwise.monitor.prometheus`` serves the
machine's: a collector that reads fresh values on every scrape (no sampling thread), through the
monitor package's prometheus_client adapter and its ``Endpoint``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rigwise.monitor.prometheus import Endpoint, render_collector, serve_collector
from rigwise.oi.status import status
from rigwise.oi.store import Store

# series name -> (metric name, help); base units per Prometheus naming practice
READINGS = {
    "temperature": ("rigwise_oi_temperature_celsius", "Housing temperature"),
    "level": ("rigwise_oi_housing_volume_ml", "Housing volume (level sensor), mL"),
    "reservoir": ("rigwise_oi_reservoir_volume_ml", "Fresh-media reservoir, mL"),
    "ph": ("rigwise_oi_ph", "Medium pH"),
    "glucose": ("rigwise_oi_glucose_millimolar", "Medium glucose, mM"),
    "lactate": ("rigwise_oi_lactate_millimolar", "Medium lactate, mM"),
    "spike_rate": ("rigwise_oi_spike_rate_hertz", "MEA spike rate per electrode"),
    "heater": ("rigwise_oi_heater_duty_ratio", "Heater duty commanded (0-1)"),
}


class OiCollector:
    def __init__(self, store_path: str) -> None:
        self.store_path = store_path

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        store = Store(self.store_path)  # one connection per scrape: scrapes come on their thread
        try:
            now = status(store)
        finally:
            store.close()
        health = now["latest"].get("health")
        if not now["latched_alarms"] and health is not None:
            yield GaugeMetricFamily(
                "rigwise_oi_health_index", "Culture-condition index (0-100)", value=float(health)
            )
        latched = GaugeMetricFamily(
            "rigwise_oi_alarm_latched", "1 per latched alarm", labels=["kind", "device"]
        )
        for a in now["latched_alarms"]:
            latched.add_metric([a["kind"], a["device"]], 1.0)
        yield latched
        for series, (name, help_text) in READINGS.items():
            value = now["latest"].get(series)
            if value is not None:
                yield GaugeMetricFamily(name, help_text, value=float(value))
        yield CounterMetricFamily("rigwise_oi_doses", "Pump doses confirmed", value=now["doses"])
        yield CounterMetricFamily(
            "rigwise_oi_exchanges", "Media exchanges completed", value=now["exchanges_done"]
        )


def render(store_path: str) -> str:
    return render_collector(OiCollector(store_path))


def serve(store_path: str, port: int = 9836, host: str = "127.0.0.1") -> Endpoint:
    return serve_collector(
        OiCollector(store_path),
        port,
        host,
        "O.I. metrics",
        "Pick another port with --metrics-port.",
    )
