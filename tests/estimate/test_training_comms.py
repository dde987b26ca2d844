"""Collectives of a training step across nodes: how a ring shares a node's NICs."""

from __future__ import annotations

import numpy as np
import pytest

from rigwise.estimate.compute import training_factors
from rigwise.estimate.training_comms import Fabric, collective
from rigwise.hardware import Accelerator, Link

GPU = Accelerator(
    id="a100-sxm-80gb",
    name="test A100",
    vendor="nvidia",
    kind="gpu",
    memory_bytes=80e9,
    memory_type="hbm2e",
    memory_bandwidth_bytes_per_s=2.0e12,
    flops={"bf16": 312e12},
    vector_fp32_flops=19.5e12,
    tdp_watts=400.0,
)
NVSWITCH = Link(id="nvs", name="nvs", kind="nvswitch", bandwidth_bytes_per_s=300e9, latency_s=0.0)
IB = Link(id="ib", name="ib", kind="infiniband", bandwidth_bytes_per_s=25e9, latency_s=0.0)
FACTORS = training_factors(GPU.id)
SIZE = 8e9


def seconds(kind: str, devices: int, span: int, ports: int = 8) -> float:
    fabric = Fabric(GPU, 8, NVSWITCH, IB, ports)
    return float(
        collective(kind, np.array([SIZE]), np.array([devices]), np.array([span]), fabric, FACTORS)[
            0
        ]
    )


def test_a_ring_over_whole_nodes_crosses_on_all_their_nics() -> None:
    # FSDP over 16 GPUs of 2 nodes: 8 group GPUs per node, 8 NICs for the node crossing;
    # DP beside TP 8: one rank per node, one NIC (its rail).
    whole_nodes = seconds("reduce_scatter", devices=16, span=16)
    one_per_node = seconds("reduce_scatter", devices=16, span=128)
    assert whole_nodes * 8 == pytest.approx(one_per_node)


def test_nic_sharing_still_limits_a_ring_and_all_to_all_gets_no_aggregation() -> None:
    assert seconds("all_gather", 16, 16, ports=4) == pytest.approx(
        2 * seconds("all_gather", 16, 16)
    )
    a2a_nodes = seconds("all_to_all", devices=16, span=16)
    a2a_ring = seconds("all_to_all", devices=16, span=128)
    assert a2a_nodes == pytest.approx(a2a_ring)


def test_inside_one_node_the_network_plays_no_part() -> None:
    inside = seconds("ring_all_reduce", devices=8, span=8)
    assert inside == pytest.approx(2 * 7 / 8 * SIZE / (300e9 * FACTORS.bus_efficiency("nvswitch")))
