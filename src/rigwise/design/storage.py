"""A storage/NAS node sized from dataset size and read throughput, with RAID 10 / RAID 6
usable capacity and rebuild exposure.

RAID arithmetic (standard): RAID 10 keeps half the raw capacity and reads from every disk;
RAID 6 keeps (n - 2) disks of capacity and survives two failures. Rebuild exposure: the rebuild
reads the surviving disks the array needs (one mirror partner for RAID 10, n - 1 disks for
RAID 6); the chance of at least one unrecoverable read error (URE) is
1 - (1 - 1/ure_bits) ** bits_read (datasheet URE rate). For RAID 6 one URE during a single-disk
rebuild is still corrected by the second parity, so its data-loss exposure needs a second
failure; we report the URE probability and which level tolerates it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rigwise.design import parts
from rigwise.errors import InputError
from rigwise.serialize import JsonObject


@dataclass(frozen=True)
class StoragePlan(JsonObject):
    level: str  # raid10 | raid6
    drive: str
    disks: int
    raw_bytes: float
    usable_bytes: float
    read_bytes_per_s: float
    rebuild_seconds: float
    rebuild_ure_probability: float
    survives_ure_during_rebuild: bool
    purchase_usd: float
    price_date: str
    fits: bool
    reason: str


def _usable(level: str, disks: int, capacity: float) -> float:
    return disks / 2 * capacity if level == "raid10" else (disks - 2) * capacity


def _read_rate(level: str, disks: int, per_disk: float) -> float:
    return disks * per_disk if level == "raid10" else (disks - 2) * per_disk


def plan_storage(
    dataset_bytes: float,
    read_bytes_per_s: float,
    *,
    level: str = "raid6",
    drive: str = "hdd-20tb",
    max_disks: int = 24,
    used: bool = False,
) -> StoragePlan:
    """Fewest disks of ``drive`` in ``level`` holding the dataset at the read rate."""
    if level not in ("raid10", "raid6"):
        raise InputError(f"Unknown RAID level {level!r}.", hint="Use raid10 or raid6.")
    if not dataset_bytes > 0:  # '0TB' sized a 6-disk array for nothing
        raise InputError(
            f"--nas-dataset of {dataset_bytes:g} bytes is no dataset to store.",
            hint="Give its size, e.g. --nas-dataset 40TB.",
        )
    part = parts.get_part("storage", drive)
    capacity = part.number("capacity_tb") * 1e12
    per_disk = part.number("seq_read_mb_s") * 1e6
    minimum = 4
    disks = minimum
    while disks < max_disks and (
        _usable(level, disks, capacity) < dataset_bytes
        or _read_rate(level, disks, per_disk) < read_bytes_per_s
    ):
        disks += 2 if level == "raid10" else 1
    fits = (
        _usable(level, disks, capacity) >= dataset_bytes
        and _read_rate(level, disks, per_disk) >= read_bytes_per_s
    )
    read_disks = 1 if level == "raid10" else disks - 1
    bits_read = read_disks * capacity * 8
    ure_bits = part.number("ure_bits", 1e14)
    # log1p keeps precision for tiny per-bit error rates.
    p_ure = 1 - math.exp(bits_read * math.log1p(-1 / ure_bits))
    write_rate = part.number("seq_write_mb_s") * 1e6
    return StoragePlan(
        level=level,
        drive=part.id,
        disks=disks,
        raw_bytes=disks * capacity,
        usable_bytes=_usable(level, disks, capacity),
        read_bytes_per_s=_read_rate(level, disks, per_disk),
        rebuild_seconds=capacity / write_rate,
        rebuild_ure_probability=p_ure,
        survives_ure_during_rebuild=level == "raid6",
        purchase_usd=(part.price.pick(used) or 0.0) * disks,
        price_date=part.price.date,
        fits=fits,
        reason="" if fits else f"needs more than {max_disks} disks of {part.name}",
    )
