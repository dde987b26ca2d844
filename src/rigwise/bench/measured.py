"""A CPU platform built from what ``rigwise bench`` measured, for machines the catalog misses.

A 2-vCPU virtual machine whose CPU reports an EPYC model string is not the 24-channel server
the catalog row describes: its measured bandwidth is a fraction of a percent of that row's peak.
Then (or when no catalog row matches at all) the run stores the *measured* figures as a
platform: memory bandwidth (the best of the STREAM-like copy/triad), dense matmul throughput
per dtype, cores, threads and RAM. Its efficiencies are relative to those figures, so the plan
factors that multiply a peak (decode bandwidth efficiency, ...) keep their catalog defaults
unless the same run measured an LLM. ``latest_measured_platform`` returns it with the run it
came from and its age, so a plan can say which measurement it rests on.

``rigwise infer MODEL --on this-machine --calibrated`` asks ``this_machine_calibration``: when
the newest run that stored anything for this machine stored a measured platform, the plan is
made on it (``--on this-machine-measured``: its bandwidth and FLOP/s, catalog efficiencies);
otherwise on the catalog device the probe matched, with that device's stored factors.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from rigwise.bench.calibration import (
    EFFICIENCY_BOUNDS,
    _connect,
    calibration_source,
    current_fingerprint,
    db_path,
    load_calibration,
    stored_rows,
)
from rigwise.bench.result import MeasuredFigures, Measurement
from rigwise.hardware.types import Accelerator

MEASURED_ID = "this-machine"
MEASURED_ON = "this-machine-measured"  # the --on spelling of the measured platform (api/machine)
BANDWIDTH_NAMES = ("memory_triad", "memory_copy")


def poor_match(matched_id: str | None, measurements: Sequence[Measurement]) -> str | None:
    """Why the catalog platform cannot stand for this CPU (None when it can)."""
    if matched_id is None:
        return "no catalog platform matches this CPU"
    for m in measurements:
        fraction = m.fraction_of_peak
        if m.device != "cpu" or fraction is None:
            continue
        low, high = EFFICIENCY_BOUNDS
        if not low < fraction <= high:
            return (
                f"{m.name} measured {fraction:.3f} of {matched_id}'s peak, outside "
                f"({low}, {high}]: this machine is not that platform"
            )
    return None


def measured_figures(
    measurements: Sequence[Measurement], cpu_model: str, cores: int, threads: int, ram: float
) -> MeasuredFigures | None:
    """The platform as measured (None without both a bandwidth and a matmul figure)."""
    cpu = [m for m in measurements if m.device == "cpu" and m.value > 0]
    bandwidths = [m.value for m in cpu if m.name in BANDWIDTH_NAMES and m.unit == "B/s"]
    flops = {m.name[7:]: m.value for m in cpu if m.name.startswith("matmul_")}
    if not bandwidths or not flops:
        return None
    return {
        "id": MEASURED_ID,
        "cpu_model": cpu_model,
        "cores": cores,
        "threads": threads,
        "memory_bytes": ram,
        "memory_bandwidth_bytes_per_s": max(bandwidths),
        "flops": flops,
    }


def to_accelerator(figures: MeasuredFigures, run_id: int | None, started_at: str) -> Accelerator:
    flops = {str(k): float(v) for k, v in figures["flops"].items()}
    return Accelerator(
        id=MEASURED_ID,
        name=f"{figures['cpu_model']} (measured)",
        vendor="cpu",
        kind="cpu",
        memory_bytes=float(figures["memory_bytes"]),
        memory_type="measured",
        memory_bandwidth_bytes_per_s=float(figures["memory_bandwidth_bytes_per_s"]),
        flops=flops,
        vector_fp32_flops=flops.get("fp32", 0.0),
        tdp_watts=0.0,
        source=f"rigwise bench run {run_id} ({started_at})",
        notes=f"{figures['cores']} cores, {figures['threads']} threads, measured",
    )


@dataclass(frozen=True)
class MeasuredPlatform:
    accelerator: Accelerator
    run_id: int
    started_at: str
    age_s: float
    reason: str  # why the catalog platform was not used

    def describe(self) -> str:
        hours = self.age_s / 3600
        age = f"{hours:.1f} h" if hours < 48 else f"{hours / 24:.0f} days"
        a = self.accelerator
        return (
            f"measured platform from run {self.run_id}, {self.started_at} ({age} old): "
            f"{a.memory_bandwidth_bytes_per_s / 1e9:.1f} GB/s, "
            f"{max(a.flops.values()) / 1e9:.1f} GFLOP/s, {a.notes} ({self.reason})"
        )


def latest_measured_platform(fingerprint_id: str | None = None) -> MeasuredPlatform | None:
    """This machine's newest run that stored a measured platform (None if none did)."""
    if not db_path().exists():
        return None
    fingerprint_id = fingerprint_id or current_fingerprint()
    with _connect() as connection:
        rows = connection.execute(
            "SELECT id, started_at, report_json FROM runs WHERE fingerprint = ? ORDER BY id DESC",
            (fingerprint_id,),
        ).fetchall()
    for run_id, started_at, report_json in rows:
        with stored_rows():
            stored = json.loads(report_json).get("measured_platform")
            if not stored:
                continue
            started = datetime.fromisoformat(str(started_at))
            return MeasuredPlatform(
                to_accelerator(stored["figures"], int(run_id), str(started_at)),
                int(run_id),
                str(started_at),
                (datetime.now(UTC) - started).total_seconds(),
                str(stored["reason"]),
            )
    return None


@dataclass(frozen=True)
class MachineCalibration:
    """What ``--on this-machine --calibrated`` plans on, and the sentence saying why."""

    on: str  # "this-machine" (the probed device) or MEASURED_ON (the measured platform)
    factors: dict[str, float]
    said: str  # which stored measurement, and how old it is


def this_machine_calibration(
    catalog_id: str, fingerprint_id: str | None = None
) -> MachineCalibration | None:
    """The newest of: a measured platform, or stored factors for ``catalog_id`` (the device the
    probe matched); None when this machine has neither."""
    fingerprint_id = fingerprint_id or current_fingerprint()
    measured = latest_measured_platform(fingerprint_id)
    source = calibration_source(catalog_id, fingerprint_id)
    if measured is not None and (source is None or measured.run_id >= source.run_id):
        return MachineCalibration(
            MEASURED_ON,
            load_calibration(MEASURED_ID, fingerprint_id),
            f"planning on the {measured.describe()}; efficiencies: catalog defaults",
        )
    if source is None:
        return None
    return MachineCalibration(
        "this-machine", load_calibration(catalog_id, fingerprint_id), source.describe()
    )
