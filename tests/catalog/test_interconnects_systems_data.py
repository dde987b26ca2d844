"""Interconnects (interconnects.csv) and system presets (systems.yaml): published link rates,
physical orderings, and that every preset points at devices and links the catalog knows."""

from __future__ import annotations

import re
from typing import Any

import pytest

from rigwise.catalog import read_csv, read_yaml
from rigwise.hardware.names import dotted_key

LINKS = "interconnects.csv"
SYSTEMS = "systems.yaml"


def _links() -> dict[str, dict[str, str]]:
    return {row["id"]: row for row in read_csv(LINKS)}


def _bw(link_id: str) -> float:
    return float(_links()[link_id]["bandwidth_gb_s"])


def _latency(link_id: str) -> float:
    return float(_links()[link_id]["latency_us"])


def _systems() -> dict[str, dict[str, Any]]:
    return {entry["id"]: entry for entry in read_yaml(SYSTEMS)}


# --- published per-direction rates --------------------------------------------------------------

PUBLISHED_GB_S = [
    # PCI-SIG: 8/16/32 GT/s with 128b/130b; PCIe 6.0 x16 = 128 GB/s, 7.0 x16 = 256 GB/s
    # per direction
    ("pcie3-x16", 15.75),
    ("pcie4-x16", 31.5),
    ("pcie5-x16", 63.0),
    ("pcie6-x16", 128.0),
    ("pcie7-x16", 256.0),
    ("pcie4-x4", 7.88),
    # NVIDIA whitepapers, bidirectional figures halved
    ("nvlink1", 80.0),  # P100: 160 GB/s
    ("nvlink2", 150.0),  # V100: 300 GB/s
    ("nvlink3", 300.0),  # A100: 600 GB/s
    ("nvlink4", 450.0),  # H100: 900 GB/s
    ("nvlink5", 900.0),  # B200: 1.8 TB/s
    ("nvlink-bridge-ampere", 56.25),  # RTX 3090 / A6000: 112.5 GB/s
    ("nvswitch-gen2", 300.0),  # DGX A100
    ("nvswitch-gen3", 450.0),  # DGX H100
    # InfiniBand Trade Association, 4x ports
    ("ib-edr", 12.5),
    ("ib-hdr", 25.0),
    ("ib-ndr", 50.0),
    ("ib-xdr", 100.0),
    # IEEE 802.3 line rates
    ("1gbe", 0.125),
    ("10gbe", 1.25),
    ("100gbe", 12.5),
    ("400gbe", 50.0),
    ("800gbe", 100.0),
]


@pytest.mark.parametrize(("link_id", "gb_s"), PUBLISHED_GB_S)
def test_link_rate_matches_published_figure(link_id: str, gb_s: float) -> None:
    assert _bw(link_id) == pytest.approx(gb_s, rel=0.01)


@pytest.mark.parametrize("gen", [3, 4, 5, 6, 7])
def test_pcie_scales_with_lanes_and_doubles_per_generation(gen: int) -> None:
    x1 = _bw(f"pcie{gen}-x1")
    for lanes in (4, 8, 16):
        assert _bw(f"pcie{gen}-x{lanes}") == pytest.approx(lanes * x1, rel=0.001)
    if gen > 3:
        assert _bw(f"pcie{gen}-x16") == pytest.approx(2 * _bw(f"pcie{gen - 1}-x16"), rel=0.02)


def test_each_generation_is_faster_than_the_last() -> None:
    ladders = [
        ["nvlink1", "nvlink2", "nvlink3", "nvlink4", "nvlink5"],
        ["nvswitch-gen1", "nvswitch-gen2", "nvswitch-gen3", "nvswitch-gen4"],
        ["ib-fdr", "ib-edr", "ib-hdr", "ib-ndr", "ib-xdr"],
        ["1gbe", "2500mbe", "10gbe", "25gbe", "40gbe", "100gbe", "200gbe", "400gbe", "800gbe"],
        ["roce-100", "roce-200", "roce-400"],
        ["wifi-6", "wifi-6e", "wifi-7"],
        ["thunderbolt-4", "thunderbolt-5"],
    ]
    for ladder in ladders:
        rates = [_bw(link) for link in ladder]
        assert rates == sorted(rates) and len(set(rates)) == len(rates), ladder


def test_latency_orders_by_technology() -> None:
    # RDMA fabrics < GPU P2P over PCIe/NVLink < kernel TCP < IP over Thunderbolt < Wi-Fi
    assert _latency("ib-ndr") <= _latency("nvlink4") <= _latency("roce-400")
    assert _latency("pcie4-x16") < _latency("100gbe") < _latency("10gbe")
    assert _latency("10gbe") < _latency("thunderbolt-5") < _latency("wifi-7")
    assert _latency("wifi-6") >= 1000  # milliseconds, not microseconds


def test_nvswitch_gives_each_gpu_its_full_nvlink_rate() -> None:
    for gen, nvlink in [(1, "nvlink2"), (2, "nvlink3"), (3, "nvlink4"), (4, "nvlink5")]:
        assert _bw(f"nvswitch-gen{gen}") == _bw(nvlink)


def test_link_rows_are_complete_and_names_unique() -> None:
    kinds = {"pcie", "nvlink", "nvswitch", "infiniband", "ethernet", "roce", "thunderbolt", "usb4"}
    kinds.add("wifi")
    owner: dict[str, str] = {}
    for link_id, row in _links().items():
        assert re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", link_id)
        assert row["kind"] in kinds
        assert float(row["bandwidth_gb_s"]) > 0 and float(row["latency_us"]) > 0
        assert row["source"] and row["notes"]
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", row["retrieved"])
        for name in [link_id, row["name"], *row["aliases"].split(";")]:
            key = dotted_key(name)  # the resolver's most specific key: '2.5' keeps its point
            assert owner.setdefault(key, link_id) == link_id, (name, owner[key], link_id)
    assert len(read_csv(LINKS)) == len(_links()), "duplicate ids"


NAMES = [
    ("PCIe 4.0 x16", "pcie4-x16"),
    ("pcie5", "pcie5-x16"),
    ("10GbE", "10gbe"),
    ("InfiniBand NDR", "ib-ndr"),
    ("NVLink 3", "nvlink3"),
    ("RTX 3090 NVLink", "nvlink-bridge-ampere"),
    ("TB5", "thunderbolt-5"),
    ("Wi-Fi 7", "wifi-7"),
]


@pytest.mark.parametrize(("typed", "expected"), NAMES)
def test_link_names_people_type_resolve(typed: str, expected: str) -> None:
    from rigwise.hardware import get_link

    assert get_link(typed).id == expected


def test_two_and_a_half_gigabit_is_not_twenty_five() -> None:
    from rigwise.hardware import get_link

    assert get_link("2.5GbE").id == "2500mbe"


# --- systems.yaml -----------------------------------------------------------------------------

SYSTEM_KEYS = {
    "id",
    "name",
    "aliases",
    "accelerator",
    "count",
    "intra_link",
    "network_link",
    "network_ports",
    "host_memory_gb",
    "price_usd",
    "power_w",
    "source",
    "retrieved",
}


def test_system_entries_have_exactly_the_documented_keys() -> None:
    entries = read_yaml(SYSTEMS)
    assert isinstance(entries, list) and entries
    ids = [entry["id"] for entry in entries]
    assert len(ids) == len(set(ids))
    for entry in entries:
        assert set(entry) == SYSTEM_KEYS, entry["id"]
        assert isinstance(entry["aliases"], list)
        assert entry["count"] >= 1 and entry["network_ports"] >= 0
        assert entry["source"] and re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(entry["retrieved"]))
        if entry["count"] == 1:
            assert entry["intra_link"] is None, entry["id"]


@pytest.mark.parametrize("system_id", sorted(_systems()))
def test_system_points_at_catalog_ids(system_id: str) -> None:
    from rigwise.hardware import get_accelerator, get_link

    entry = _systems()[system_id]
    assert get_accelerator(entry["accelerator"]).id == entry["accelerator"]
    for key in ("intra_link", "network_link"):
        if entry[key] is not None:
            assert get_link(entry[key]).id == entry[key]
    if entry["network_link"] is None:
        assert entry["network_ports"] == 0


@pytest.mark.parametrize("system_id", ["dgx-a100", "dgx-h100", "dgx-h200", "dgx-b200"])
def test_dgx_switch_matches_its_gpus_nvlink(system_id: str) -> None:
    from rigwise.hardware import get_accelerator, get_link

    entry = _systems()[system_id]
    gpu = get_accelerator(entry["accelerator"])
    switch = get_link(entry["intra_link"])
    assert entry["count"] == 8 and entry["network_ports"] == 8
    assert switch.kind == "nvswitch"
    assert switch.bandwidth_bytes_per_s == pytest.approx(gpu.nvlink_bytes_per_s)


def test_unified_and_cpu_nodes_do_not_count_memory_twice() -> None:
    from rigwise.hardware import get_accelerator

    for system_id, entry in _systems().items():
        kind = get_accelerator(entry["accelerator"]).kind
        if kind in ("unified", "cpu"):
            assert entry["host_memory_gb"] is None, system_id


def test_seed_004_macbook_price() -> None:
    # seed 004: MacBook Pro 16 M3 Max 40-core GPU 128GB "5k$ with 1TB SSD"
    entry = _systems()["macbook-pro-16-m3-max-128gb"]
    assert entry["price_usd"] == pytest.approx(5000, rel=0.01)
    assert entry["accelerator"] == "m3-max-40c-128gb"


def test_preset_builds_a_cluster() -> None:
    from rigwise.hardware import parse_node

    cluster = parse_node("dgx-h100", nodes=4, network="ib-ndr")
    assert cluster.accelerator_count == 32
    node = cluster.nodes[0]
    assert node.intra_link is not None and node.intra_link.id == "nvswitch-gen3"
    assert node.memory_bytes == pytest.approx(8 * 80 * 2**30)
    assert cluster.network is not None and cluster.network.bandwidth_bytes_per_s == 50e9
