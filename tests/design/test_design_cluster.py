from __future__ import annotations

from pathlib import Path

import pytest

from rigwise.design.cluster import intra_link_name, rig_to_cluster
from rigwise.design.rigfile import GpuLookup, load_rig, parse_rig, resolve_rig

RIGS = Path(__file__).parents[2] / "examples" / "rigs"


def test_rig_becomes_one_node_with_its_ram() -> None:
    rig = load_rig(RIGS / "seed000-x10drg-q-4x-p40.yaml")
    cluster = rig_to_cluster(rig)
    node = cluster.nodes[0]
    assert node.count == 4 and node.accelerator.id == "p40"
    assert node.host_memory_bytes == pytest.approx(16 * 64e9)
    assert node.intra_link is not None and node.intra_link.kind == "pcie"


def test_link_follows_the_slowest_slot_and_riser() -> None:
    rig = load_rig(RIGS / "seed000-x9dri-ln4f-4x-3090-risers.yaml")
    assert intra_link_name(rig) == "pcie3-x16"
    assert intra_link_name(load_rig(RIGS / "seed003-dual-4090.yaml")) == "pcie4-x8"


def test_mixed_gpus_become_one_node_per_model(gpu_lookup: GpuLookup) -> None:
    rig = resolve_rig(
        parse_rig(
            {
                "motherboard": "romed8-2t",
                "cpu": "epyc-7302p",
                "ram": {"module": "ddr4-rdimm-32gb-3200", "count": 4},
                "psu": {"name": "corsair-ax1600i"},
                "gpus": [{"name": "rtx-3090", "slot": 1}, {"name": "rtx-4090", "slot": 5}],
            }
        ),
        gpu_lookup,
    )
    cluster = rig_to_cluster(rig, link_lookup=lambda name: None)  # type: ignore[arg-type,return-value]
    assert [(n.accelerator.id, n.count) for n in cluster.nodes] == [
        ("rtx-3090", 1),
        ("rtx-4090", 1),
    ]
    assert all(n.host_memory_bytes == rig.ram_bytes for n in cluster.nodes)


def test_bridged_pair_plans_over_the_bridge_link() -> None:
    rig = load_rig(RIGS / "good-2x-3090-nvlink.yaml")
    assert intra_link_name(rig) == "nvlink-bridge-ampere"
    link = rig_to_cluster(rig).nodes[0].intra_link
    assert link is not None and link.kind == "nvlink"


def test_load_rig_cluster_from_a_file() -> None:
    from rigwise.design.cluster import load_rig_cluster

    cluster = load_rig_cluster(str(RIGS / "seed000-wrx80e-3x-3090-nvlink.yaml"))
    assert cluster.accelerator_count == 3
    assert cluster.nodes[0].intra_link is not None
    assert cluster.nodes[0].intra_link.id == "pcie4-x16"  # 3 GPUs, one bridge: PCIe for the rest


def test_a_mixed_rig_file_plans_as_a_mixed_rig(tmp_path: Path) -> None:
    from rigwise.design.cluster import rig_on_text

    rig = tmp_path / "mixed.yaml"
    rig.write_text(
        "motherboard: romed8-2t\ncpu: epyc-7302p\n"
        "ram: {module: ddr4-rdimm-32gb-3200, count: 4}\npsu: {name: corsair-ax1600i}\n"
        "gpus: [{name: rtx-3090, slot: 1}, {name: rtx-3090, slot: 3}, {name: rtx-4090, slot: 5}]\n"
    )
    assert rig_on_text(str(rig)) == "2x rtx-3090+rtx-4090"
