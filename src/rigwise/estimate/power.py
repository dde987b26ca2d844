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
from dataclasses import dataclass, replace
from functools import cache
from typing import TYPE_CHECKING, Any

from rigwise.catalog.loader import read_csv
from rigwise.serialize import JsonObject

if TYPE_CHECKING:
    from rigwise.estimate.inference import Phase

CURVES = "parts/power_limit_curves.csv"


@dataclass(frozen=True)
class PowerPoint(JsonObject):
    """One accelerator at one power limit."""

    limit_watts: float  # the cap in force (TDP when none)
    relative_throughput: float  # of the speed at the stock limit
    drawn_watts: float  # mean board power while working
    curve: str  # "measured <accelerator>" or "cmos (cap/TDP)^exponent"


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


def inference_power(
    devices: tuple[tuple[str, float], ...],
    limit_watts: float | None,
    prefill: Phase,
    decode: Phase,
    *,
    exponent: float,
    utilisation: float,
) -> tuple[Phase, Phase, dict[str, Any]]:
    """Prefill and decode at a board power cap, with the energy per token.

    ``devices`` are (accelerator id, TDP) of every device that runs the model. The cap lowers
    the SM clock: compute-bound parts (matmuls, attention, kernel launches) slow down as the
    device's measured prefill curve or (cap/TDP)^exponent says; memory-bound parts follow the
    measured decode curve where one exists and otherwise keep their speed (HBM clocks are not
    lowered by the board cap). Energy per token = the devices' drawn power x time per token.
    """
    slowest = min(devices, key=lambda d: d[1] and (limit_watts or d[1]) / d[1])
    compute = power_point(
        slowest[0], slowest[1], limit_watts, exponent=exponent, utilisation=utilisation,
        workload="prefill",
    )  # fmt: skip
    measured_decode = _measured_decode(slowest[0], slowest[1], limit_watts)
    memory = 1.0 if measured_decode is None else measured_decode
    c = compute.relative_throughput
    # A measured decode curve already holds the compute share of decode: it scales all of it.
    d = (memory, memory) if measured_decode is not None else (c, 1.0)
    scaled = [_scaled(prefill, c, 1.0), _scaled(decode, *d)]
    watts = sum(
        power_point(i, tdp, limit_watts, exponent=exponent, utilisation=utilisation).drawn_watts
        for i, tdp in devices
    )
    prefill_c, decode_c = scaled
    report = {
        "limit_watts": limit_watts,
        "drawn_watts": watts,
        "compute_relative_throughput": compute.relative_throughput,
        "memory_relative_throughput": memory,
        "decode_relative_throughput": decode.tokens_per_s
        and scaled[1].tokens_per_s / decode.tokens_per_s,
        "curve": compute.curve,
        "prefill_joules_per_token": watts / prefill_c.tokens_per_s,
        "decode_joules_per_token": watts / decode_c.tokens_per_s,
    }
    return prefill_c, decode_c, report


_COMPUTE_PARTS = ("compute", "attention", "kernel_overhead", "gemm_tiles")


def _measured_decode(accelerator_id: str, tdp_watts: float, limit: float | None) -> float | None:
    """Decode speed kept at ``limit`` from the device's measured decode curve, if any."""
    points = _measured("decode").get(accelerator_id)
    if not limit or not tdp_watts or not points or len(points) < 2:
        return None
    value = _interpolate(points, min(limit, tdp_watts) / tdp_watts)
    return value if value > 0 else points[0][1]


def _scaled(phase: Phase, compute: float, memory: float) -> Phase:
    parts = {
        name: seconds / (compute if name in _COMPUTE_PARTS else memory)
        if name in (*_COMPUTE_PARTS, "memory_bandwidth")
        else seconds
        for name, seconds in phase.parts.items()
    }
    total = sum(parts.values())
    ratio = total / sum(phase.parts.values()) if sum(phase.parts.values()) > 0 else 1.0
    return replace(
        phase, seconds=phase.seconds * ratio, tokens_per_s=phase.tokens_per_s / ratio, parts=parts
    )


def capped_inference(
    accelerators: tuple[Any, ...], limit_watts: float, prefill: Phase, decode: Phase
) -> tuple[Phase, Phase, dict[str, Any]]:
    """``inference_power`` for the accelerators of a plan's stages, with the training
    catalog's power factors (``power_cap_exponent``, ``power_utilisation``)."""
    from rigwise.estimate.compute import training_factors

    factors = training_factors(accelerators[0].id)
    devices = tuple((acc.id, acc.tdp_watts) for acc in accelerators)
    return inference_power(
        devices,
        limit_watts,
        prefill,
        decode,
        exponent=factors.power_cap_exponent,
        utilisation=factors.power_utilisation,
    )
