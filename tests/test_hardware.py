"""rigwise.hardware: catalog loading, names people type, nodes, clusters and cluster files."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigwise.errors import CatalogError, InputError, UnknownNameError
from rigwise.hardware import (
    accelerators,
    get_accelerator,
    get_link,
    links,
    load_cluster_file,
    parse_node,
    resolve_accelerator,
    systems,
)
from rigwise.hardware.catalog import build_accelerators, build_links, build_systems

HAS_APPLE = any(a.vendor == "apple" for a in accelerators())
HAS_LINKS = bool(links())
HAS_SYSTEMS = bool(systems())
needs_apple = pytest.mark.skipif(not HAS_APPLE, reason="accelerators_apple.csv not installed")
needs_links = pytest.mark.skipif(not HAS_LINKS, reason="interconnects.csv not installed")
needs_systems = pytest.mark.skipif(not HAS_SYSTEMS, reason="systems.yaml not installed")


def _row(**overrides: str) -> dict[str, str]:
    row = {
        "id": "test-gpu",
        "name": "Test GPU",
        "vendor": "nvidia",
        "kind": "gpu",
        "aliases": "Test Card",
        "memory_gb": "24",
        "memory_bandwidth_gb_s": "1000",
        "bf16_tflops": "100",
        "fp8_tflops": "200",
        "vector_fp32_tflops": "50",
        "tdp_w": "300",
        "source": "made up for a test",
        "retrieved": "2026-01-01",
    }
    row.update(overrides)
    return row


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("RTX 4090", "rtx-4090"),
        ("rtx4090", "rtx-4090"),
        ("4090 24GB", "rtx-4090"),
        ("NVIDIA GeForce RTX 4090", "rtx-4090"),
        ("rtx-4090", "rtx-4090"),
        ("A100 SXM 80GB", "a100-sxm-80gb"),
        ("A100-SXM4-80GB", "a100-sxm-80gb"),
        ("NVIDIA A100-SXM4-80GB", "a100-sxm-80gb"),
        ("NVIDIA A100 80GB PCIe", "a100-pcie-80gb"),
        ("H100 80GB HBM3", "h100-sxm"),
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("NVIDIA H200", "h200-sxm"),
        ("Tesla V100-SXM2-16GB", "v100-sxm2-16gb"),
        ("Tesla T4", "t4"),
        ("AMD Instinct MI300X", "mi300x"),
        ("7900 XTX", "rx-7900-xtx"),
        ("NVIDIA RTX 6000 Ada Generation", "rtx-6000-ada"),
    ],
)
def test_names_people_type_resolve(typed: str, expected: str) -> None:
    assert get_accelerator(typed).id == expected


@needs_apple
def test_apple_names_resolve() -> None:
    assert get_accelerator("M2 Ultra 76-Core GPU 192GB").id == "m2-ultra-76c-192gb"
    family = resolve_accelerator("M3 Max")
    assert family.accelerator.vendor == "apple"
    assert "m3" in family.accelerator.id and "max" in family.accelerator.id
    assert family.alternatives and all(i.startswith("m3-max") for i in family.alternatives)
    assert "M3 Max" in family.note
    assert not resolve_accelerator("M2 Ultra 76-Core GPU 192GB").note


def test_unknown_name_gives_three_close_suggestions() -> None:
    with pytest.raises(UnknownNameError) as caught:
        get_accelerator("rtx 4900")
    assert len(caught.value.suggestions) == 3
    assert "rtx-4090" in caught.value.suggestions
    assert "Did you mean" in str(caught.value)


def test_units_are_converted_to_si() -> None:
    acc = build_accelerators({"t.csv": [_row()]}).devices[0]
    assert acc.memory_bytes == 24 * 2**30  # marketed "GB" of memory are GiB
    assert acc.memory_bandwidth_bytes_per_s == 1000e9
    assert acc.flops == {"fp32": 50e12, "bf16": 100e12, "fp8": 200e12}
    assert acc.peak_flops("fp16") == 100e12  # falls back to bf16
    assert acc.tdp_watts == 300


@pytest.mark.parametrize(
    ("overrides", "column"),
    [
        ({"memory_gb": "-1"}, "memory_gb"),
        ({"memory_gb": "lots"}, "memory_gb"),
        ({"kind": "fpga"}, "kind"),
        ({"retrieved": "last year"}, "retrieved"),
        ({"street_price_date": "2024"}, "street_price_date"),
        ({"id": "Not An Id"}, "id"),
        ({"surprise": "1"}, "surprise"),
    ],
)
def test_bad_rows_name_file_row_and_column(overrides: dict[str, str], column: str) -> None:
    with pytest.raises(CatalogError) as caught:
        build_accelerators({"broken.csv": [_row(id="ok-gpu"), _row(**overrides)]})
    message = str(caught.value)
    assert "broken.csv" in message and "data row 2" in message and repr(column) in message


def test_duplicate_ids_across_files_are_rejected() -> None:
    with pytest.raises(CatalogError, match=r"already defined in a\.csv"):
        build_accelerators({"a.csv": [_row()], "b.csv": [_row()]})


def test_a_default_for_name_on_one_row_still_reports_the_family() -> None:
    small = _row(id="fam-10c-16gb", name="Fam 10c 16GB", aliases="")
    big = _row(id="fam-20c-64gb", name="Fam 20c 64GB", aliases="Fam", default_for="Fam")
    resolution = build_accelerators({"f.csv": [small, big]}).resolve("Fam")
    assert resolution.accelerator.id == "fam-20c-64gb"
    assert resolution.alternatives == ("fam-10c-16gb",)


def test_family_name_picks_the_default_for_row_and_says_so() -> None:
    small = _row(id="fam-small", name="Fam 10c 16GB", aliases="Fam", memory_gb="16")
    big = _row(id="fam-big", name="Fam 20c 64GB", aliases="Fam", default_for="Fam")
    catalog = build_accelerators({"f.csv": [small, big]})
    chosen = catalog.resolve("Fam")
    assert chosen.accelerator.id == "fam-big"
    assert chosen.alternatives == ("fam-small",)
    assert "fam-big" in chosen.note and "fam-small" in chosen.note


def test_shared_alias_without_default_picks_the_first_row() -> None:
    first = _row(id="fam-a", name="Fam A", aliases="Fam")
    second = _row(id="fam-b", name="Fam B", aliases="Fam")
    assert build_accelerators({"f.csv": [first, second]}).resolve("Fam").accelerator.id == "fam-a"


def test_family_prefix_picks_the_biggest_variant() -> None:
    small = _row(id="fam-10c-16gb", name="Fam 10c 16GB", aliases="", bf16_tflops="5")
    big = _row(id="fam-20c-64gb", name="Fam 20c 64GB", aliases="", bf16_tflops="10")
    resolution = build_accelerators({"f.csv": [small, big]}).resolve("fam")
    assert resolution.accelerator.id == "fam-20c-64gb"
    assert resolution.note


def test_absent_link_and_system_files_give_empty_tables() -> None:
    assert build_links(()).items == ()
    assert build_systems(None).items == ()
    with pytest.raises(CatalogError, match="list of mappings"):
        build_systems({"id": "x"})


def test_node_with_count_and_nvlink() -> None:
    node = parse_node("2x rtx-3090+nvlink").nodes[0]
    assert node.accelerator.id == "rtx-3090" and node.count == 2
    assert node.intra_link is not None and node.intra_link.kind == "nvlink"
    assert node.intra_link.bandwidth_bytes_per_s == node.accelerator.nvlink_bytes_per_s
    assert node.memory_bytes == 48 * 2**30


def test_sxm_parts_default_to_their_nvlink() -> None:
    node = parse_node("4xA100 SXM 80GB").nodes[0]
    assert node.count == 4 and node.accelerator.id == "a100-sxm-80gb"
    assert node.intra_link is not None
    assert node.intra_link.bandwidth_bytes_per_s == pytest.approx(300e9)


@needs_links
def test_pcie_cards_default_to_their_pcie_link() -> None:
    node = parse_node("2x rtx-4090").nodes[0]
    assert node.intra_link is not None and node.intra_link.id == "pcie4-x16"


def test_a_name_starting_with_digits_is_not_a_count() -> None:
    node = parse_node("7900 XTX").nodes[0]
    assert node.count == 1 and node.accelerator.id == "rx-7900-xtx"


def test_nvlink_on_a_card_without_it_is_an_input_error() -> None:
    with pytest.raises(InputError, match="no NVLink"):
        parse_node("2x rtx-4090+nvlink")


@pytest.mark.parametrize("text", ["", "0x rtx-4090", "2x rtx-4090+"])
def test_malformed_node_text_is_an_input_error(text: str) -> None:
    with pytest.raises(InputError):
        parse_node(text)


@needs_links
def test_nodes_and_network() -> None:
    cluster = parse_node("2x rtx-3090", nodes=3, network="10gbe")
    assert cluster.accelerator_count == 6
    assert cluster.network is not None and cluster.network.id == get_link("10GbE").id


@needs_systems
def test_system_preset_as_a_node() -> None:
    node = parse_node("dgx-h100").nodes[0]
    assert node.accelerator.id == "h100-sxm" and node.count == 8
    assert node.host_memory_bytes and node.host_memory_bytes > 1e12
    with pytest.raises(InputError, match="--nodes 2"):
        parse_node("2x dgx-h100")


def test_cpu_rows_are_nodes_too() -> None:
    cpu = next((a for a in accelerators() if a.kind == "cpu"), None)
    if cpu is None:
        pytest.skip("accelerators_cpu.csv not installed")
    assert parse_node(cpu.id).nodes[0].accelerator.kind == "cpu"


@needs_links
def test_cluster_file(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(
        "nodes:\n"
        "  - on: rtx-4090\n"  # a bare `on` is a YAML 1.1 boolean key; it must still work
        '  - {on: "2x rtx-3090+nvlink", count: 2, host_memory_gb: 128}\n'
        "network: 10gbe\n"
    )
    cluster = load_cluster_file(path)
    assert [n.accelerator.id for n in cluster.nodes] == ["rtx-4090", "rtx-3090", "rtx-3090"]
    assert cluster.accelerator_count == 5
    assert cluster.nodes[1].host_memory_bytes == 128 * 2**30
    assert cluster.network is not None and cluster.network.id == "10gbe"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("nodes: []\n", "'nodes'"),
        ("nodes:\n  - {on: rtx-4090, cuont: 2}\n", "nodes.0.cuont"),
        ("nodes:\n  - {on: rtx-4090, count: 0}\n", "nodes.0.count"),
        ("nodes:\n  - {on: rtx 4900}\n", "nodes.0.on"),
        ("- just a list\n", "mapping"),
        ("nodes: [\n", "not valid YAML"),
    ],
)
def test_bad_cluster_files_name_file_and_key(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        load_cluster_file(path)
    assert "bad.yaml" in str(caught.value) and expected in str(caught.value)


def test_missing_cluster_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"Cluster file .* not found"):
        load_cluster_file(tmp_path / "nope.yaml")


def test_to_dict_has_the_documented_keys() -> None:
    keys = set(get_accelerator("rtx-4090").to_dict())
    documented = {
        "id", "name", "vendor", "kind", "memory_bytes", "memory_bandwidth_bytes_per_s", "flops",
        "vector_fp32_flops", "tdp_watts", "pcie_gen", "pcie_lanes", "nvlink_bytes_per_s",
        "street_price_usd", "street_price_date", "source", "retrieved",
    }  # fmt: skip
    assert documented <= keys


@needs_links
def test_a_decimal_point_is_not_dropped_from_names() -> None:
    try:
        two_and_a_half = get_link("2.5GbE").id
    except UnknownNameError:
        two_and_a_half = "unknown"  # acceptable until interconnects.csv lists '2.5GbE'
    assert two_and_a_half in ("2500mbe", "unknown")
    assert get_link("25GbE").id == "25gbe"
    assert get_link("PCIe 4.0 x16").id == "pcie4-x16"


def test_one_name_normaliser_serves_every_table() -> None:
    from rigwise.catalog.names import normalize
    from rigwise.hardware import names as hardware_names

    assert hardware_names.normalize is normalize
    assert normalize("NVIDIA GeForce RTX 4090") == normalize("rtx-4090") == "rtx4090"
    assert normalize("AMD Radeon RX 7900 XTX") == "rx7900xtx"
    assert normalize("Intel Arc A770") == "arca770"
    assert normalize("2x a+b") == "2xaplusb"
    assert normalize("Tesla V100", drop_vendor_words=False) == "teslav100"
