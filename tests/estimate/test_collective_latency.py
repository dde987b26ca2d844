"""Small-collective step latency (``estimate.collective_latency``)."""

from __future__ import annotations

import pytest

from rigwise.estimate import comms
from rigwise.estimate.collective_latency import collective_link
from rigwise.hardware import Link

PCIE = Link(
    id="pcie4-x16", name="PCIe 4.0 x16", kind="pcie", bandwidth_bytes_per_s=31.5e9, latency_s=2e-6
)
NVLINK = Link(
    id="nvlink3", name="NVLink 3", kind="nvlink", bandwidth_bytes_per_s=300e9, latency_s=1e-6
)


def test_eight_byte_all_reduce_on_eight_pcie_gpus_matches_nccl_tests() -> None:
    # NVIDIA/nccl issue #1439: all_reduce_perf -g 8, 8x RTX 3090 over PCIe, 8 B: 54.18 us (the
    # row the step latency was derived from: a consistency check of the ring arithmetic).
    cost = comms.ring_all_reduce(8, 8, collective_link(PCIE))
    assert cost.seconds == pytest.approx(54.18e-6, rel=0.01)


def test_link_kinds_without_a_row_keep_their_latency() -> None:
    assert collective_link(NVLINK) is NVLINK
