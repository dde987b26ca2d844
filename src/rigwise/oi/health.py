"""The health index ("happiness" in the UI): an operational culture-condition index.

It is NOT a welfare measure: it says how well the plant keeps the culture's conditions and how
the culture's own signals compare with its own past, nothing about experience. Rule version 1:
a weighted geometric mean (weights from the constants file) of

- environment compliance: share of recent readings (EMA, 24 h) with temperature, pH and
  osmolality all in band;
- metabolic state: glucose and lactate (EMA, 6 h) against the culture's own baseline (EMA, 7 d);
- electrophysiological vitality: spike rate (EMA, 6 h) against its own trailing baseline (7 d);
- plant integrity: delivered/commanded volume, time since the last exchange, sensor health.

Shows ``ALARM`` while a critical alarm is latched and ``UNKNOWN`` with too few or implausible data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from rigwise.oi.constants import Constants

HEALTH_RULES_VERSION = "oi-health-1"
LACTATE_FLOOR_MM = 2.0  # rigwise choice: a lactate rise of 2 mM over baseline halves the term
FLOOR = 0.01  # a component at zero would erase the others; the floor keeps the mean defined


class Ema:
    __slots__ = ("tau_s", "value")

    def __init__(self, tau_s: float) -> None:
        self.tau_s = tau_s
        self.value: float | None = None

    def update(self, x: float, dt_s: float) -> float:
        if self.value is None:
            self.value = x
        else:
            a = 1.0 - math.exp(-dt_s / self.tau_s)
            self.value += a * (x - self.value)
        return self.value


@dataclass(frozen=True)
class HealthIndex:
    status: str  # "OK" | "ALARM" | "UNKNOWN"
    score: float | None  # 0-100 when status is OK
    components: dict[str, float | None]
    rules_version: str = HEALTH_RULES_VERSION

    @property
    def display(self) -> str:
        return (
            f"{self.score:.0f}" if self.status == "OK" and self.score is not None else self.status
        )


@dataclass
class HealthTracker:
    c: Constants
    samples: int = 0
    env: Ema = field(default_factory=lambda: Ema(86400.0))
    glucose: Ema = field(default_factory=lambda: Ema(6 * 3600.0))
    glucose_base: Ema = field(default_factory=lambda: Ema(7 * 86400.0))
    lactate: Ema = field(default_factory=lambda: Ema(6 * 3600.0))
    lactate_base: Ema = field(default_factory=lambda: Ema(7 * 86400.0))
    spikes: Ema = field(default_factory=lambda: Ema(6 * 3600.0))
    spikes_base: Ema = field(default_factory=lambda: Ema(7 * 86400.0))
    sensors: Ema = field(default_factory=lambda: Ema(3600.0))
    delivery: Ema = field(default_factory=lambda: Ema(86400.0))

    def observe(self, values: dict[str, float | None], sensor_ok_share: float, dt_s: float) -> None:
        c = self.c
        self.sensors.update(sensor_ok_share, dt_s)
        t, ph, osm = values.get("temperature"), values.get("ph"), values.get("osmolality")
        if t is None or ph is None or osm is None:
            return
        in_band = (
            c["temperature_band_low_c"] <= t <= c["temperature_band_high_c"]
            and c["ph_band_low"] <= ph <= c["ph_band_high"]
            and c["osmolality_band_low_mosm_kg"] <= osm <= c["osmolality_band_high_mosm_kg"]
        )
        self.env.update(1.0 if in_band else 0.0, dt_s)
        for name, now, base in (
            ("glucose", self.glucose, self.glucose_base),
            ("lactate", self.lactate, self.lactate_base),
            ("spike_rate", self.spikes, self.spikes_base),
        ):
            v = values.get(name)
            if v is not None:
                now.update(v, dt_s)
                base.update(v, dt_s)
        self.samples += 1

    def observe_delivery(self, ratio: float) -> None:
        self.delivery.update(min(1.0, max(0.0, ratio)), 3600.0)

    def _components(self, since_exchange_s: float) -> dict[str, float | None]:
        c = self.c

        def rel(now: Ema, base: Ema) -> float | None:
            if now.value is None or base.value is None or base.value <= 0:
                return None
            return now.value / base.value

        g, spk = rel(self.glucose, self.glucose_base), rel(self.spikes, self.spikes_base)
        lac, lac_base = self.lactate.value, self.lactate_base.value
        metabolic = None
        if g is not None and lac is not None and lac_base is not None:
            # lactate starts near zero in fresh medium: its excess is taken against a floor
            excess = max(0.0, lac - lac_base) / max(lac_base, LACTATE_FLOOR_MM)
            metabolic = max(0.0, 1.0 - 0.5 * abs(1.0 - g) - 0.5 * excess)
        overdue = max(0.0, since_exchange_s / c["exchange_interval_s"] - 1.5)
        plant = (
            (self.delivery.value if self.delivery.value is not None else 1.0)
            * (self.sensors.value or 0.0)
            * math.exp(-overdue)
        )
        return {
            "environment": self.env.value,
            "metabolic": metabolic,
            "electrophysiology": None if spk is None else min(1.0, spk),
            "plant": plant,
        }

    def index(self, alarm_latched: bool, since_exchange_s: float) -> HealthIndex:
        comps = self._components(since_exchange_s)
        if alarm_latched:
            return HealthIndex("ALARM", None, comps)
        if self.samples < self.c["health_min_samples"] or any(v is None for v in comps.values()):
            return HealthIndex("UNKNOWN", None, comps)
        weights = {k: self.c[f"health_weight_{k}"] for k in comps}
        total = sum(weights.values())
        log_mean = sum(w * math.log(max(FLOOR, comps[k] or 0.0)) for k, w in weights.items())
        return HealthIndex("OK", 100.0 * math.exp(log_mean / total), comps)
