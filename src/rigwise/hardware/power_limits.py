"""The board power limits an accelerator accepts (``catalog/data/power_limit_ranges.csv``): a
``--power-limit`` outside them is bad input, as ``nvidia-smi -pl`` refuses it. Published ranges
where there are some; otherwise a bound in fractions of the catalog TDP, stated in the file."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase

from rigwise.catalog.loader import read_csv
from rigwise.errors import InputError
from rigwise.hardware.types import Accelerator

RANGES = "power_limit_ranges.csv"


@dataclass(frozen=True)
class PowerLimitRange:
    min_watts: float
    max_watts: float
    basis: str  # "published" or the generic rule, for the message


def settable_range(accelerator: Accelerator) -> PowerLimitRange | None:
    """The limits ``accelerator`` accepts (None: no row and no TDP to bound it by)."""
    for row in read_csv(RANGES):
        if not fnmatchcase(accelerator.id, row["accelerator"]):
            continue
        if row["min_watts"]:
            return PowerLimitRange(float(row["min_watts"]), float(row["max_watts"]), "published")
        tdp = accelerator.tdp_watts
        if not tdp:
            return None
        low, high = float(row["min_tdp_fraction"]), float(row["max_tdp_fraction"])
        rule = f"{low:g}-{high:g}x its {tdp:g} W TDP; no published range"
        return PowerLimitRange(low * tdp, high * tdp, rule)
    return None


def below_settable(watts: float | None, accelerator: Accelerator) -> bool:
    """Whether ``watts`` is below the lowest cap ``accelerator`` accepts: no box runs it there
    (``rigwise build``; a cap above its range leaves a card at stock, min(limit, TDP))."""
    found = settable_range(accelerator) if watts else None
    return found is not None and watts is not None and watts < found.min_watts


def check_power_limit(watts: float | None, devices: Iterable[Accelerator]) -> None:
    """Raise ``InputError`` when ``watts`` (a per-device cap) is outside a device's range."""
    if watts is None:
        return
    for accelerator in {device.id: device for device in devices}.values():
        found = settable_range(accelerator)
        if found is None or found.min_watts <= watts <= found.max_watts:
            continue
        span = f"{found.min_watts:g}-{found.max_watts:g} W"
        raise InputError(
            f"--power-limit {watts:g} W is outside what {accelerator.id} accepts: {span} "
            f"({found.basis}).",
            hint=f"Give a limit of {span} per device, or leave --power-limit out for the "
            f"stock {accelerator.tdp_watts:g} W.",
        )


__all__ = ["PowerLimitRange", "below_settable", "check_power_limit", "settable_range"]
