"""Collective and point-to-point communication costs over a ``Link``.

The alpha-beta model: a transfer costs ``latency_s`` per message step plus bytes over the
per-direction bandwidth. Ring collectives move ``(n-1)/n`` of the buffer per step group:
all-reduce = reduce-scatter + all-gather, so ``2(n-1)/n * S / B`` plus ``2(n-1)`` latencies
(Patarasuk & Yuan 2009, "Bandwidth optimal all-reduce algorithms"; NCCL tests
``doc/PERFORMANCE.md``: busbw = algbw * 2(n-1)/n). All-to-all sends ``(n-1)/n`` of each
device's buffer to the others (Thakur, Rabenseifner & Gropp 2005, pairwise exchange).

Every function returns a ``CommCost`` breakdown (bandwidth part + latency part). The
arithmetic is elementwise, so numpy arrays may be passed for ``size_bytes`` or ``devices``
(the training search evaluates many layouts at once); the fields then hold arrays.

SIGNATURES ARE STABLE (imported by estimate/training*.py):
    p2p(size_bytes, link) -> CommCost
    ring_all_reduce(size_bytes, devices, link) -> CommCost
    all_gather(size_bytes, devices, link) -> CommCost       # size = the gathered (full) buffer
    reduce_scatter(size_bytes, devices, link) -> CommCost   # size = the full input buffer
    all_to_all(size_bytes, devices, link) -> CommCost       # size = one device's send buffer
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from rigwise.errors import InputError
from rigwise.hardware import Link
from rigwise.serialize import JsonObject


@dataclass(frozen=True)
class CommCost(JsonObject):
    """Time of one communication step, split into its bandwidth and latency parts."""

    json_properties: ClassVar[tuple[str, ...]] = ("seconds",)

    operation: str
    bytes_per_device: float  # bytes each device sends (per direction)
    bandwidth_seconds: float
    latency_seconds: float

    @property
    def seconds(self) -> float:
        return self.bandwidth_seconds + self.latency_seconds


def _check(link: Link) -> None:
    if not link.bandwidth_bytes_per_s > 0:
        raise InputError(
            f"Link {link.id!r} has no bandwidth ({link.bandwidth_bytes_per_s!r} B/s).",
            hint="Give the link a positive per-direction bandwidth in the catalog.",
        )


def _ring(operation: str, size_bytes: Any, devices: Any, link: Link, passes: int) -> CommCost:
    """``passes`` ring sweeps of (n-1) steps, each moving 1/n of the buffer."""
    _check(link)
    steps = passes * (devices - 1)
    sent = steps * size_bytes / devices
    return CommCost(
        operation=operation,
        bytes_per_device=sent,
        bandwidth_seconds=sent / link.bandwidth_bytes_per_s,
        latency_seconds=steps * link.latency_s,
    )


def p2p(size_bytes: Any, link: Link) -> CommCost:
    """One message from one device to another: latency + size / bandwidth."""
    _check(link)
    return CommCost(
        operation="p2p",
        bytes_per_device=size_bytes,
        bandwidth_seconds=size_bytes / link.bandwidth_bytes_per_s,
        latency_seconds=link.latency_s + 0.0 * size_bytes,
    )


def ring_all_reduce(size_bytes: Any, devices: Any, link: Link) -> CommCost:
    """All-reduce of a ``size_bytes`` buffer over ``devices`` in a ring: 2(n-1)/n * S."""
    return _ring("all_reduce", size_bytes, devices, link, passes=2)


def all_gather(size_bytes: Any, devices: Any, link: Link) -> CommCost:
    """Gather a ``size_bytes`` buffer (n shards) onto every device: (n-1)/n * S."""
    return _ring("all_gather", size_bytes, devices, link, passes=1)


def reduce_scatter(size_bytes: Any, devices: Any, link: Link) -> CommCost:
    """Reduce a ``size_bytes`` buffer and leave one shard on each device: (n-1)/n * S."""
    return _ring("reduce_scatter", size_bytes, devices, link, passes=1)


def all_to_all(size_bytes: Any, devices: Any, link: Link) -> CommCost:
    """Each device sends (n-1)/n of its ``size_bytes`` buffer, one message per peer."""
    return _ring("all_to_all", size_bytes, devices, link, passes=1)
