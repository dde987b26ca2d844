"""`rigwise gpus`, `rigwise gpus compare` and `rigwise gpu`, driven through the real CLI group."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from rigwise.cli import cli
from rigwise.hardware import accelerators

STABLE_KEYS = {
    "id", "name", "vendor", "kind", "memory_bytes", "memory_bandwidth_bytes_per_s", "flops",
    "vector_fp32_flops", "tdp_watts", "pcie_gen", "pcie_lanes", "nvlink_bytes_per_s",
    "street_price_usd", "street_price_date", "source", "retrieved",
}  # fmt: skip
HAS_APPLE = any(a.vendor == "apple" for a in accelerators())


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), terminal_width=120)
    return result.exit_code, result.stdout, result.stderr


def test_gpus_json_lists_devices_with_stable_keys() -> None:
    code, out, _ = run("gpus", "--json")
    assert code == 0
    devices = json.loads(out)["devices"]
    assert len(devices) >= 50
    assert all(set(d) >= STABLE_KEYS for d in devices)
    assert all(d["kind"] != "cpu" for d in devices)  # CPUs only with --kind cpu


def test_gpus_filters_and_sorts() -> None:
    code, out, _ = run(
        "gpus", "--vendor", "nvidia", "--min-memory", "24GB", "--max-price", "2000",
        "--sort", "memory", "--json",
    )  # fmt: skip
    assert code == 0
    devices = json.loads(out)["devices"]
    assert devices, "some NVIDIA card with 24 GB costs under $2000 (RTX 3090 in the seed)"
    assert all(d["vendor"] == "nvidia" and d["memory_bytes"] >= 24e9 for d in devices)
    prices = [d["street_price_usd"] or d["launch_price_usd"] for d in devices]
    assert all(p is not None and p <= 2000 for p in prices)
    memory = [d["memory_bytes"] for d in devices]
    assert memory == sorted(memory, reverse=True)


def test_gpus_value_columns_follow_from_price_and_specs() -> None:
    _, out, _ = run("gpus", "--json")
    rtx3090 = next(d for d in json.loads(out)["devices"] if d["id"] == "rtx-3090")
    price = rtx3090["street_price_usd"]
    assert rtx3090["value"]["gb_per_usd"] == pytest.approx(24 / price)
    assert rtx3090["value"]["gb_s_per_usd"] == pytest.approx(936 / price)
    assert rtx3090["value"]["bf16_tflops_per_watt"] == pytest.approx(71 / 350)


def test_gpus_table_renders() -> None:
    code, out, _ = run("gpus", "--vendor", "amd")
    assert code == 0
    assert "mi300x" in out and "rtx-4090" not in out


def test_kind_cpu_shows_cpu_rows() -> None:
    code, out, _ = run("gpus", "--kind", "cpu", "--json")
    assert code == 0
    assert all(d["kind"] == "cpu" for d in json.loads(out)["devices"])


def test_compare_json_and_table() -> None:
    names = ["RTX 3090", "RTX 4090", "H100 80GB HBM3"]
    code, out, _ = run("gpus", "compare", *names, "--json")
    assert code == 0
    assert [d["id"] for d in json.loads(out)["devices"]] == ["rtx-3090", "rtx-4090", "h100-sxm"]
    code, out, _ = run("gpus", "compare", *names)
    assert code == 0
    assert "bf16 TFLOPS" in out and "989.5" in out
    assert max(len(line) for line in out.splitlines()) <= 120


@pytest.mark.skipif(not HAS_APPLE, reason="accelerators_apple.csv not installed")
def test_compare_with_an_apple_family_name() -> None:
    code, out, _ = run("gpus", "compare", "RTX 3090", "RTX 4090", "M3 Max", "--json")
    assert code == 0
    devices = json.loads(out)["devices"]
    assert devices[2]["vendor"] == "apple" and devices[2]["kind"] == "unified"


def test_gpu_json() -> None:
    code, out, _ = run("gpu", "NVIDIA A100-SXM4-80GB", "--json")
    assert code == 0
    device = json.loads(out)
    assert set(device) >= STABLE_KEYS
    assert device["id"] == "a100-sxm-80gb"
    assert device["flops"]["bf16"] == pytest.approx(312e12)
    assert "fp8" not in device["flops"]


def test_gpu_table_shows_sources() -> None:
    code, out, _ = run("gpu", "rtx-3090")
    assert code == 0
    assert "source" in out and "GA102" in out


@pytest.mark.parametrize(
    "args",
    [
        ("gpu", "rtx 4900"),
        ("gpus", "compare", "RTX 4090", "rtx 4900"),
        ("gpu", "rtx 4900", "--json"),
    ],
)
def test_unknown_name_exits_2_with_three_suggestions(args: tuple[str, ...]) -> None:
    code, out, err = run(*args)
    assert code == 2
    if "--json" in args:  # with --json the error is JSON on stdout: {"error", "hint"}
        err = json.loads(out)["hint"]
    suggestions = err.split("Did you mean:")[1].strip().rstrip("?").split(", ")
    assert len(suggestions) == 3 and "rtx-4090" in suggestions


def test_bad_memory_filter_exits_2() -> None:
    code, _, err = run("gpus", "--min-memory", "24 bananas")
    assert code == 2 and "bananas" in err


@pytest.mark.parametrize(
    ("args", "says"),
    [
        # before: exit 2 'No accelerator matches those filters.' with no word on the typo
        (["--vendor", "nvida"], "Unknown vendor 'nvida'. Did you mean: nvidia"),
        (["--kind", "gpuu"], "Unknown kind 'gpuu'. Did you mean: gpu"),
    ],
)
def test_a_misspelt_vendor_or_kind_suggests_the_name(args: list[str], says: str) -> None:
    result = CliRunner().invoke(cli, ["gpus", *args])
    assert result.exit_code == 2 and says in result.stderr


@pytest.mark.parametrize("as_json", [False, True])
def test_valid_filters_that_match_nothing_are_a_result_naming_the_filter_to_relax(
    as_json: bool,
) -> None:
    """Before: exit 2 'No accelerator matches those filters.' (bad input) as a table, and exit 0
    with an empty list as JSON. Now exit 1 both ways (as build and fit answer nothing), saying
    which filter, dropped, lets devices through."""
    args = ["gpus", "--vendor", "nvidia", "--min-memory", "100TB", "--max-price", "1"]
    code, out, err = run(*args, *(["--json"] if as_json else []))
    assert code == 1
    said = json.loads(out)["notes"][0] if as_json else err.strip()
    assert said.startswith("No accelerator matches --vendor nvidia, --min-memory 100TB, ")
    assert said.endswith("Relax more than one of them.")  # neither alone is the cause
    code, out, err = run("gpus", "--vendor", "nvidia", "--min-memory", "100TB", "--json")
    assert code == 1 and json.loads(out)["devices"] == []
    nvidia = sum(a.vendor == "nvidia" for a in accelerators())
    assert json.loads(out)["notes"] == [
        f"No accelerator matches --vendor nvidia, --min-memory 100TB. Relax --min-memory "
        f"({nvidia} match without it)."
    ]


def test_a_zero_price_filter_is_named_when_nothing_matches() -> None:
    """Before: 'gpus --max-price 0' said "No accelerator matches . Relax more than one of them."
    (a falsy 0 was no filter to name)."""
    listed = len(json.loads(run("gpus", "--json")[1])["devices"])
    code, _, err = run("gpus", "--max-price", "0")
    assert code == 1
    assert err.strip() == (
        f"No accelerator matches --max-price 0. Relax --max-price ({listed} match without it)."
    )
