"""Power drawn and speed kept under a board power cap, for training and inference energy.

Speed: a measured compute-bound curve of the accelerator where one is published
(``catalog/data/parts/power_limit_curves.csv``, workload ``training``: relative throughput
at a power limit, interpolated in the fraction of the stock limit); otherwise CMOS scaling,
throughput ~ (cap / TDP) ** ``power_cap_exponent`` (dynamic power ~ f V^2 with V rising with f).
Power: a GPU under load averages ``power_utilisation`` of its limit (it boosts to the limit on
the heavy kernels and idles in the gaps; Llama 3 paper Sec. 3.3.4), so lowering the cap lowers
the power drawn in proportion while the speed falls less: energy per unit of work falls with
the cap down to the knee of the curve.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cache

from rigwise.catalog.loader import read_csv

CURVES = "parts/power_limit_curves.csv"


@dataclass(frozen=True)
class PowerPoint:
    """One accelerator at one power limit."""

    limit_watts: float  # the cap in force (TDP when none)
    relative_throughput: float  # of the speed at the stock limit
    drawn_watts: float  # mean board power while working
    curve: str  # "measured <accelerator>" or "cmos (cap/TDP)^exponent"

    def to_dict(self) -> dict[str, float | str]:
        return {
            "limit_watts": self.limit_watts,
            "relative_throughput": self.relative_throughput,
            "drawn_watts": self.drawn_watts,
            "curve": self.curve,
        }


@cache
def _measured(workload: str) -> dict[str, tuple[tuple[float, float], ...]]:
    table: dict[str, list[tuple[float, float]]] = {}
    for row in read_csv(CURVES):
        if row["workload"] == workload:
            point = (float(row["power_limit_w"]), float(row["relative_throughput"]))
            table.setdefault(row["accelerator"], []).append(point)
    return {acc: tuple(sorted(points)) for acc, points in table.items()}


def _interpolate(points: tuple[tuple[float, float], ...], fraction: float) -> float:
    """Linear between measured points (as fractions of the top one), flat above; below the
    lowest point, the CMOS curve through it is used by the caller."""
    top = points[-1][0]
    scaled = [(w / top, y) for w, y in points]
    if fraction >= scaled[-1][0]:
        return scaled[-1][1]
    for (x0, y0), (x1, y1) in itertools.pairwise(scaled):
        if x0 <= fraction <= x1:
            return y0 + (y1 - y0) * (fraction - x0) / (x1 - x0)
    return -1.0


def power_point(
    accelerator_id: str,
    tdp_watts: float,
    limit_watts: float | None,
    *,
    exponent: float,
    utilisation: float,
    workload: str = "training",
) -> PowerPoint:
    """Speed kept and power drawn by one accelerator at ``limit_watts`` (None: stock)."""
    limit = min(limit_watts, tdp_watts) if limit_watts and tdp_watts else tdp_watts
    if not tdp_watts:
        return PowerPoint(0.0, 1.0, 0.0, "no TDP published")
    fraction = limit / tdp_watts
    points = _measured(workload).get(accelerator_id)
    relative, curve = -1.0, f"cmos (cap/TDP)^{exponent:g}"
    if points and len(points) >= 2:
        relative = _interpolate(points, fraction)
        curve = f"measured {accelerator_id} ({workload})"
    if relative < 0:
        relative = fraction**exponent
    return PowerPoint(limit, float(relative), utilisation * limit, curve)
