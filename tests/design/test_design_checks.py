"""Rig check verdicts on every example rig (the seed-000 builds and the four problem rigs)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from rigwise.design.checks_power import parse_connectors
from rigwise.design.rigcheck import check_rig
from rigwise.design.rigfile import GpuLookup, Rig, load_rig, parse_rig, resolve_rig
from rigwise.errors import InputError, UnknownNameError

RIGS = Path(__file__).parents[2] / "examples" / "rigs"
TODAY = dt.date(2026, 11, 21)

# file -> (verdict, the checks that must report an error or warning)
EXPECTED = {
    "good-2x-3090-nvlink.yaml": ("ok", set()),
    "overloaded-psu.yaml": ("fails", {"psu"}),
    "lane-shortfall.yaml": ("fails", {"lanes"}),
    "triple-slot-adjacent.yaml": ("fails", {"width"}),
    "seed000-x10drg-q-4x-p40.yaml": ("warnings", {"psu"}),
    "seed000-x9dri-ln4f-4x-3090-risers.yaml": ("warnings", {"psu"}),
    "seed000-c9x299-4x-titan-rtx.yaml": ("warnings", {"slots", "cooling"}),
    "seed000-z9pe-d16-2x-rtx8000.yaml": ("ok", set()),
    "seed000-x13dei-4x-rtx6000ada.yaml": ("ok", set()),
    "seed000-x9drg-qf-4x-p100.yaml": ("warnings", {"psu"}),
    "seed000-x99-ws-e-10g-4x-a4500.yaml": ("ok", set()),
    "seed000-wrx80e-3x-3090-nvlink.yaml": ("warnings", {"cooling"}),
    "seed000-wrx90-4x-4090-risers.yaml": ("warnings", {"psu"}),
    "seed000-mz73-lm0-2x-rtx6000ada.yaml": ("ok", set()),
    "seed003-basic-1x-4090.yaml": ("warnings", {"psu"}),
    "seed003-dual-4090.yaml": ("warnings", {"psu", "slots"}),
    "seed003-quad-4090.yaml": ("ok", set()),
}


def test_every_example_rig_has_an_expected_verdict() -> None:
    assert {p.name for p in RIGS.glob("*.yaml")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_rig_verdict(name: str) -> None:
    verdict, flagged = EXPECTED[name]
    result = check_rig(load_rig(RIGS / name), today=TODAY)
    assert result.verdict == verdict, [p.message for p in result.problems]
    reported = {p.check for p in result.problems if p.severity in ("error", "warning")}
    assert flagged <= reported
    assert all(p.fix for p in result.problems if p.severity == "error")


def _rig(gpu_lookup: GpuLookup, **changes: Any) -> Rig:
    data = {
        "motherboard": "romed8-2t",
        "cpu": "epyc-7302p",
        "ram": {"module": "ddr4-rdimm-32gb-3200", "count": 4},
        "psu": {"name": "corsair-ax1600i"},
        "case": "fractal-meshify-2-xl",
        "gpus": [{"name": "rtx-3090", "slots": [1, 5]}],
    }
    data.update(changes)
    return resolve_rig(parse_rig(data), gpu_lookup)


def test_triple_slot_card_covers_the_next_two_slots(gpu_lookup: GpuLookup) -> None:
    rig = _rig(gpu_lookup, gpus=[{"name": "rtx-3090", "slots": [1, 3]}])
    problems = check_rig(rig, today=TODAY).problems
    width = [p for p in problems if p.check == "width"]
    assert width and "covers slots 1-3" in width[0].message
    ok = check_rig(_rig(gpu_lookup, gpus=[{"name": "rtx-3090", "slots": [1, 4]}]), today=TODAY)
    assert not [p for p in ok.problems if p.check == "width"]


def test_riser_and_water_block_clear_the_collision(gpu_lookup: GpuLookup) -> None:
    risers = [{"name": "rtx-3090", "slots": [1, 2], "riser": "pcie4-x16-riser-300"}]
    assert not [
        p
        for p in check_rig(_rig(gpu_lookup, gpus=risers), today=TODAY).problems
        if p.check == "width"
    ]
    blocks = [{"name": "rtx-3090", "slots": [1, 2], "water_block": True}]
    assert not [
        p
        for p in check_rig(_rig(gpu_lookup, gpus=blocks), today=TODAY).problems
        if p.check == "width"
    ]


def test_x16_size_slot_wired_x4_is_flagged(gpu_lookup: GpuLookup) -> None:
    rig = _rig(
        gpu_lookup,
        motherboard="b650-generic",
        cpu="ryzen-7-7800x3d",
        ram={"module": "ddr5-udimm-32gb-5600", "count": 2},
        gpus=[{"name": "rtx-3090", "slots": [1, 4]}],
    )
    problems = check_rig(rig, today=TODAY).problems
    assert any(p.check == "slots" and "wired x4" in p.message for p in problems)


def test_lane_budget_counts_gpus_nvme_and_nics(gpu_lookup: GpuLookup) -> None:
    rig = _rig(
        gpu_lookup,
        storage=[{"name": "nvme-gen4-2tb", "count": 3}],
        network=[{"name": "mellanox-cx5-100g", "slot": 3}],
    )
    lanes = check_rig(rig, today=TODAY).lanes
    assert lanes.used_cpu_lanes == 16 + 16 + 3 * 4 + 16
    assert lanes.cpu_lanes == 128


def test_psu_rule_is_150_percent(gpu_lookup: GpuLookup) -> None:
    result = check_rig(_rig(gpu_lookup), today=TODAY)
    assert result.psu_recommended_watts == pytest.approx(1.5 * result.power_load.total_watts)
    small = check_rig(_rig(gpu_lookup, psu={"name": "corsair-rm1000x-shift"}), today=TODAY)
    assert small.power_load.total_watts < 1000 < 1.5 * small.power_load.total_watts
    assert any(p.check == "psu" and p.severity == "warning" for p in small.problems)


def test_connectors_count_adapters(gpu_lookup: GpuLookup) -> None:
    # Four 12VHPWR cards on a PSU with no native 12VHPWR and 4 PCIe 8-pin: adapters need 12.
    gpus = [{"name": "rtx-4090", "slots": [1, 3, 5, 7], "riser": "pcie4-x16-riser-300"}]
    rig = _rig(gpu_lookup, psu={"name": "corsair-rm1000x-shift", "count": 1}, gpus=gpus)
    assert any(p.check == "connectors" for p in check_rig(rig, today=TODAY).problems)
    assert parse_connectors("1x 8-pin + 1x 6-pin PCIe") == {"pcie-8pin": 1, "pcie-6pin": 1}
    assert parse_connectors("1x 8-pin EPS") == {"eps-8pin": 1}
    assert parse_connectors("1x 16-pin 12V-2x6") == {"12vhpwr": 1}
    assert parse_connectors("1x 12-pin (FE) / 2x 8-pin PCIe") == {"pcie-8pin": 2}
    assert parse_connectors("none (slot powered)") == {}


def test_circuit_limit_120v_15a(gpu_lookup: GpuLookup) -> None:
    gpus = [{"name": "rtx-3090", "slots": [1, 3, 5, 7], "riser": "pcie4-x16-riser-300"}]
    rig = _rig(gpu_lookup, gpus=gpus, psu={"name": "server-2400-redundant"}, circuit="us-120v-15a")
    result = check_rig(rig, today=TODAY)
    assert result.power_load.wall_watts > 120 * 15 * 0.8
    assert any(p.check == "circuit" for p in result.problems)
    eu = check_rig(
        _rig(gpu_lookup, gpus=gpus, psu={"name": "server-2400-redundant"}, circuit="eu-230v-16a"),
        today=TODAY,
    )
    assert not any(p.check == "circuit" for p in eu.problems)


def test_ram_vs_vram_for_training(gpu_lookup: GpuLookup) -> None:
    rig = _rig(gpu_lookup, task="train", ram={"module": "ddr4-rdimm-32gb-3200", "count": 2})
    assert any(p.check == "ram" for p in check_rig(rig, today=TODAY).problems)


def test_nvlink_needs_matching_cards_and_spacing(gpu_lookup: GpuLookup) -> None:
    wrong_spacing = _rig(gpu_lookup, nvlink=[{"bridge": "nvlink-3090-3slot", "gpus": [0, 1]}])
    assert any(p.check == "nvlink" for p in check_rig(wrong_spacing, today=TODAY).problems)
    no_nvlink = _rig(
        gpu_lookup,
        gpus=[{"name": "rtx-4090", "slots": [1, 5]}],
        nvlink=[{"bridge": "nvlink-3090-4slot", "gpus": [0, 1]}],
    )
    assert any("does not fit" in p.message for p in check_rig(no_nvlink, today=TODAY).problems)


def test_stale_prices_are_flagged_relative_to_today(gpu_lookup: GpuLookup) -> None:
    rig = _rig(gpu_lookup)
    old = check_rig(rig, today=dt.date(2030, 1, 1))
    assert old.stale_prices == len(old.parts)
    assert any(p.check == "prices" for p in old.problems)
    fresh = check_rig(rig, today=dt.date(2024, 7, 2), max_price_age_days=10_000)
    assert fresh.stale_prices == 0


def test_bad_rig_files_name_the_key(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("motherboard: romed8-2t\ncpu: epyc-7302p\npsu: {name: x}\n")
    with pytest.raises(InputError, match="'ram'"):
        load_rig(bad)
    bad.write_text("motherboard: [\n")
    with pytest.raises(InputError, match="not valid YAML"):
        load_rig(bad)
    with pytest.raises(InputError, match="slot"):
        parse_rig(
            {
                "motherboard": "a",
                "cpu": "b",
                "ram": {"module": "m", "count": 1},
                "psu": {"name": "p"},
                "gpus": [{"name": "rtx-3090"}],
            }
        )


def test_unknown_board_in_rig_suggests(gpu_lookup: GpuLookup) -> None:
    with pytest.raises(UnknownNameError):
        _rig(gpu_lookup, motherboard="romed8")
