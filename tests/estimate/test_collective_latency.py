"""Small collectives inside a node (``estimate.collective_latency``): expected values are the
stock-configuration NCCL measurements cited in ``collective_latency.csv``."""

from __future__ import annotations

import statistics

import pytest

from rigwise.estimate import comms
from rigwise.estimate.collective_latency import collective_link, collective_row
from rigwise.hardware import Link

PCIE4 = Link(
    id="pcie4-x16", name="PCIe 4.0 x16", kind="pcie", bandwidth_bytes_per_s=31.508e9, latency_s=2e-6
)
PCIE5 = Link(
    id="pcie5-x16", name="PCIe 5.0 x16", kind="pcie", bandwidth_bytes_per_s=63.015e9, latency_s=2e-6
)
NVLINK = Link(
    id="nvlink3", name="NVLink 3", kind="nvlink", bandwidth_bytes_per_s=300e9, latency_s=1e-6
)


# Stock NCCL only (no NCCL_* variable, vendor driver), as the rows are: the runs cited in
# collective_latency.csv as used. Per-step values are the all-reduce time / 2(n-1).
EIGHT_STEPS_US = (48.16 / 14, 54.18 / 14, 45 / 14, 56.9 / 14)
FOUR_STEPS_US = (13.2 / 6, 19.4 / 6)


@pytest.mark.parametrize(
    ("link", "size_bytes", "measured_s"),
    [
        (PCIE4, 8, 54.18e-6),  # NVIDIA/nccl #1439: 8x RTX 3090, two root complexes
        (PCIE4, 8192, 56.9e-6),  # vllm #50576: 8x A800 PCIe, 2x4 islands, bf16 8 KB
        (PCIE5, 4096, 45e-6),  # sglang PR #32479: 8x RTX 6000D, two NUMA nodes, 4 KB
        (PCIE5, 32768, 48.16e-6),  # rtx6kpro nccl-tuning.md: 8x RTX PRO 6000, dual Turin
        (PCIE5, 65536, 48.69e-6),  # same host, 64 KB
        # not asserted: same host 256 KB 56.48 us; the ring at the 32 MB stock busbw gives
        # ~72 us there (+27 %), NCCL's mid-size protocols (LL128) are not modelled
    ],
)
def test_small_all_reduce_on_eight_pcie_gpus_of_two_sockets(
    link: Link, size_bytes: int, measured_s: float
) -> None:
    cost = comms.ring_all_reduce(size_bytes, 8, collective_link(link, 8))
    assert cost.seconds == pytest.approx(measured_s, rel=0.2)


def test_the_step_latencies_are_the_medians_of_the_stock_runs() -> None:
    eight, four = collective_row("pcie", 8), collective_row("pcie", 4)
    assert eight is not None and four is not None
    assert eight.step_latency_s == pytest.approx(statistics.median(EIGHT_STEPS_US) * 1e-6, rel=2e-3)
    assert four.step_latency_s == pytest.approx(statistics.median(FOUR_STEPS_US) * 1e-6, rel=2e-3)


def test_small_all_reduce_on_four_pcie_gpus_of_one_socket() -> None:
    link = collective_link(PCIE5, 4)
    # rtx6kpro pcie-oneshot-allreduce.md (4x RTX PRO 6000, one NUMA node) 13.2 us and
    # sglang-V100 PR #2 (4x V100 behind one PLX switch, in a CUDA graph) 19.4 us at 4 KB:
    # the row, their median, lies between them
    assert 13.2e-6 < comms.ring_all_reduce(4096, 4, link).seconds < 19.4e-6
    assert comms.ring_all_reduce(16384, 4, link).seconds == pytest.approx(14.7e-6, rel=0.25)


def _bus_bandwidth(link: Link, devices: int) -> float:
    """nccl-tests busbw of a 1 GB all-reduce: size * 2(n-1)/n / time (doc/PERFORMANCE.md)."""
    size = 1e9
    cost = comms.ring_all_reduce(size, devices, collective_link(link, devices))
    return size * 2 * (devices - 1) / devices / cost.seconds


@pytest.mark.parametrize(
    ("devices", "stock_bytes_per_s", "tuned_bytes_per_s"),
    [
        # rtx6kpro nccl-tuning.md: 8x RTX PRO 6000 dual Turin, default NCCL (2 channels) 22.2
        # GB/s; NCCL_MIN_NCHANNELS=8 with the graph XML 37.6 GB/s
        (8, 22.2e9, 37.6e9),
        # rtx6kpro asus-esc8000a-e13p-broadcom-switches.md: 4x RTX PRO 6000 on NUMA 0, default
        # NCCL 30.3 GB/s; NCCL_P2P_LEVEL=SYS 39.3 GB/s
        (4, 30.3e9, 39.3e9),
    ],
)
def test_large_all_reduce_reaches_the_stock_bus_bandwidth_not_the_tuned_one(
    devices: int, stock_bytes_per_s: float, tuned_bytes_per_s: float
) -> None:
    busbw = _bus_bandwidth(PCIE5, devices)
    assert busbw == pytest.approx(stock_bytes_per_s, rel=0.05)
    assert busbw < tuned_bytes_per_s * 0.85


def test_a_ring_across_two_sockets_is_slower_per_step_and_per_byte() -> None:
    four, eight = collective_link(PCIE5, 4), collective_link(PCIE5, 8)
    assert eight.latency_s > four.latency_s
    assert eight.bandwidth_bytes_per_s < four.bandwidth_bytes_per_s < PCIE5.bandwidth_bytes_per_s


def test_the_row_with_the_largest_min_devices_not_above_the_group_applies() -> None:
    rows = [collective_row("pcie", n) for n in (2, 4, 5, 8, 16)]
    assert [row.min_devices if row else None for row in rows] == [2, 2, 5, 5, 5]
    assert collective_row("pcie", 1) is None


def test_link_kinds_without_a_row_keep_their_link() -> None:
    assert collective_link(NVLINK, 8) is NVLINK
