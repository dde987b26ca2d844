"""Bench results: each measurement next to the catalog's peak and rigwise's prediction."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:
    from rigwise.bench.screen import Reference

# Units whose "better" direction is lower: the fraction of peak is peak / value for them.
DURATION_UNITS = ("s",)


@dataclass(frozen=True)
class Measurement:
    """One measured figure. ``peak`` is the catalog's datasheet bound for the same quantity
    (None when the device is not in the catalog); ``predicted`` is what rigwise's own model
    says before this run's calibration (None when there is no model for it)."""

    name: str  # matmul_bf16, device_copy, llm_decode, ... (docs/probe.md lists them)
    device: str  # cpu | cuda:0 | disk:/tmp | ollama ...
    value: float
    unit: str  # FLOP/s | B/s | tokens/s | B | s
    peak: float | None = None
    predicted: float | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def fraction_of_peak(self) -> float | None:
        if not self.peak or self.value <= 0:
            return None
        if self.unit in DURATION_UNITS:
            return self.peak / self.value
        return self.value / self.peak

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "device": self.device,
            "value": self.value,
            "unit": self.unit,
            "peak": self.peak,
            "predicted": self.predicted,
            "fraction_of_peak": self.fraction_of_peak,
            "details": dict(self.details),
        }


@dataclass(frozen=True)
class Skipped:
    name: str
    reason: str


class MeasuredFigures(TypedDict):
    """This machine's CPU platform as measured (stored in the run's JSON; bench/measured.py)."""

    id: str
    cpu_model: str
    cores: int
    threads: int
    memory_bytes: float
    memory_bandwidth_bytes_per_s: float
    flops: dict[str, float]


class MeasuredPlatformJson(TypedDict):
    """Why the catalog platform is a poor match, and the platform as measured."""

    reason: str
    figures: MeasuredFigures


@dataclass(frozen=True)
class BenchReport:
    fingerprint: str
    started_at: str  # ISO 8601, UTC
    quick: bool
    seconds: float
    measurements: tuple[Measurement, ...]
    skipped: tuple[Skipped, ...] = ()
    # accelerator id (catalog id, or "cpu") -> efficiency key -> measured factor
    calibration: dict[str, dict[str, float]] = field(default_factory=dict)
    run_id: int | None = None
    platform: str = ""  # how the machine was identified (catalog match, or measured only)
    references: tuple[Reference, ...] = ()  # one plan before/after calibration
    # where the catalog platform is a poor match (bench/measured.py)
    measured_platform: MeasuredPlatformJson | None = None

    def get(self, name: str, device: str | None = None) -> Measurement | None:
        for measurement in self.measurements:
            if measurement.name == name and (device is None or measurement.device == device):
                return measurement
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "fingerprint": self.fingerprint,
            "started_at": self.started_at,
            "quick": self.quick,
            "seconds": self.seconds,
            "measurements": [m.to_dict() for m in self.measurements],
            "skipped": [{"name": s.name, "reason": s.reason} for s in self.skipped],
            "calibration": self.calibration,
            "platform": self.platform,
            "reference_plans": [r.to_dict() for r in self.references],
            "measured_platform": self.measured_platform,
        }
