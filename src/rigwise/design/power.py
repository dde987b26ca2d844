"""System power at idle and load, and GPU power-limit curves from measured data.

Load power is the sum of the parts (GPUs at their power limit, CPU at a fraction of TDP while it
feeds the GPUs, DIMMs, drives, NICs, fans, board); wall power divides by the PSU's efficiency.
The fractions are rows of parts/build_rules.csv. Seed 003 gives the check values: 1x/2x/4x
RTX 4090 systems draw about 550/1050/2000 W (tests/design/test_power.py).

Power limits: decode is memory-bound, so it keeps most of its speed when the limit drops;
prefill and training are compute-bound and slow down with the clock. The curves are measured
points (parts/power_limit_curves.csv), interpolated in the fraction of the stock limit; a GPU
without its own curve borrows the measured curve of the same workload and says so.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass

from rigwise.design import parts
from rigwise.design.rigfile import Rig
from rigwise.serialize import JsonObject


@dataclass(frozen=True)
class PowerBreakdown(JsonObject):
    """DC power by part at one state (idle or load), the total, and wall (AC) power."""

    state: str
    gpus_watts: float
    cpu_watts: float
    ram_watts: float
    board_watts: float
    storage_watts: float
    network_watts: float
    fans_watts: float
    total_watts: float
    wall_watts: float


def _storage_watts(rig: Rig, key: str) -> float:
    return sum(drive.number(key) * count for drive, count, _ in rig.storage)


def rig_power(rig: Rig, state: str = "load") -> PowerBreakdown:
    """DC and wall power of ``rig`` at ``state`` ('load' or 'idle')."""
    load = state == "load"
    if load:
        gpus = sum(g.power_limit_watts for g in rig.gpus)
        cpu_fraction = parts.rule("cpu_load_fraction_gpu_work")
    else:
        gpus = sum(g.accelerator.tdp_watts for g in rig.gpus) * parts.rule("gpu_idle_fraction")
        cpu_fraction = parts.rule("cpu_idle_fraction")
    cpu = rig.cpu.tdp_watts * rig.cpu_count * cpu_fraction
    ram = rig.ram.watts_per_module * rig.ram_count * (1.0 if load else 0.5)
    board = parts.rule("board_watts_server" if rig.motherboard.server else "board_watts_desktop")
    drives = _storage_watts(rig, "watts_load" if load else "watts_idle")
    network = sum(card.number("watts") for card, _ in rig.network) * (1.0 if load else 0.6)
    fans = (rig.fans * parts.rule("fan_watts")) + sum(c.number("watts") for c in rig.cooling)
    total = gpus + cpu + ram + board + drives + network + fans
    return PowerBreakdown(
        state=state,
        gpus_watts=gpus,
        cpu_watts=cpu,
        ram_watts=ram,
        board_watts=board,
        storage_watts=drives,
        network_watts=network,
        fans_watts=fans,
        total_watts=total,
        wall_watts=total / rig.psu.efficiency,
    )


@dataclass(frozen=True)
class PowerLimitEffect(JsonObject):
    """How much of its stock throughput a GPU keeps at a power limit, and from what data."""

    accelerator_id: str
    workload: str
    power_limit_watts: float
    stock_watts: float
    relative_throughput: float
    curve_from: str  # accelerator id whose measured curve was used
    source: str


def _curves() -> dict[tuple[str, str], list[tuple[float, float, str]]]:
    table: dict[tuple[str, str], list[tuple[float, float, str]]] = defaultdict(list)
    for row in parts.power_limit_points():
        key = (row["accelerator"], row["workload"])
        table[key].append(
            (float(row["power_limit_w"]), float(row["relative_throughput"]), row["source"])
        )
    return {key: sorted(points) for key, points in table.items()}


def _interpolate(points: list[tuple[float, float]], x: float) -> float:
    """Linear in between, flat above the top, linear to zero below the lowest point."""
    if x >= points[-1][0]:
        return points[-1][1]
    if x <= points[0][0]:
        return points[0][1] * max(x, 0.0) / points[0][0]
    for (x0, y0), (x1, y1) in itertools.pairwise(points):
        if x0 <= x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return points[-1][1]


def power_limit_effect(
    accelerator_id: str, stock_watts: float, workload: str, limit_watts: float
) -> PowerLimitEffect:
    """Relative throughput of ``workload`` (decode | prefill | training) at ``limit_watts``."""
    curves = _curves()
    key = (accelerator_id, workload)
    if key not in curves:
        # Borrow the measured curve of the same workload with the most points, in TDP fraction.
        donors = [k for k in curves if k[1] == workload] or list(curves)
        key = max(donors, key=lambda k: len(curves[k]))
    points = curves[key]
    donor_stock = points[-1][0]
    fraction_points = [(w / donor_stock, y) for w, y, _ in points]
    fraction = min(limit_watts, stock_watts) / stock_watts
    return PowerLimitEffect(
        accelerator_id=accelerator_id,
        workload=workload,
        power_limit_watts=min(limit_watts, stock_watts),
        stock_watts=stock_watts,
        relative_throughput=_interpolate(fraction_points, fraction),
        curve_from=key[0],
        source=points[0][2],
    )
