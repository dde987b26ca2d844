"""Small collectives inside a node (``collective_latency.csv``): step latency and ring bandwidth.

A batch-1 decode under tensor parallelism all-reduces a few KB twice per layer, so the cost is
the ring's 2(n-1) step latencies (Patarasuk & Yuan 2009), and a step of an NCCL collective is
slower than a bare p2p write: published NCCL runs on 8 PCIe GPUs take 42-57 us for an all-reduce
of 8 B-8 KB, 3.0-4.1 us per step against ~2 us of p2p latency. A large all-reduce over PCIe
reaches only part of the link's bandwidth, less when the ring crosses two CPU sockets (an 8-GPU
PCIe server): the data file gives both per link kind and group size.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

from rigwise.catalog.loader import read_csv
from rigwise.estimate.identity_memo import IdentityMemo
from rigwise.hardware import Link


@dataclass(frozen=True)
class CollectiveRow:
    """One row of ``collective_latency.csv``."""

    link_kind: str
    min_devices: int
    step_latency_s: float
    bus_bandwidth_fraction: float


@functools.cache
def _rows() -> tuple[CollectiveRow, ...]:
    rows = (
        CollectiveRow(
            link_kind=row["link_kind"],
            min_devices=int(row.get("min_devices") or 1),
            step_latency_s=float(row["step_latency_us"]) * 1e-6,
            bus_bandwidth_fraction=float(row.get("bus_bandwidth_fraction") or 1.0),
        )
        for row in read_csv("collective_latency.csv")
    )
    return tuple(sorted(rows, key=lambda r: r.min_devices))


def collective_row(kind: str, devices: int) -> CollectiveRow | None:
    """The row for a group of ``devices`` on ``kind`` links: largest min_devices <= devices."""
    found = None
    for row in _rows():
        if row.link_kind == kind and row.min_devices <= devices:
            found = row
    return found


def collective_link(link: Link, devices: int) -> Link:
    """``link`` as a collective of ``devices`` ranks sees it: the step latency of its kind (where
    larger than the link's p2p latency) and the share of its bandwidth a ring reaches (kept
    per link object and group size: a plan asks for it per layer kind and per step)."""
    return _COLLECTIVE_LINKS.get((link,), devices, lambda: _collective_link(link, devices))


_COLLECTIVE_LINKS: IdentityMemo[Link] = IdentityMemo()


def _collective_link(link: Link, devices: int) -> Link:
    row = collective_row(link.kind, devices)
    if row is None:
        return link
    return replace(
        link,
        latency_s=max(link.latency_s, row.step_latency_s),
        bandwidth_bytes_per_s=link.bandwidth_bytes_per_s * row.bus_bandwidth_fraction,
    )


__all__ = ["CollectiveRow", "collective_link", "collective_row"]
