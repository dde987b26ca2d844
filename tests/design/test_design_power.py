"""Seed 003's power examples and PSU rule, and the measured power-limit curves."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigwise.catalog.loader import read_csv
from rigwise.design import parts
from rigwise.design.power import power_limit_effect, rig_power
from rigwise.design.rigcheck import check_rig
from rigwise.design.rigfile import load_rig

RIGS = Path(__file__).parents[2] / "examples" / "rigs"

# Seed 003 "Power Consumption Examples": GPUs + system, in watts (system draw, DC side).
SEED_003 = [
    ("seed003-basic-1x-4090.yaml", 550.0),
    ("seed003-dual-4090.yaml", 1050.0),
    ("seed003-quad-4090.yaml", 2000.0),
]
TOLERANCE = 0.10  # the seed's figures are rounded ("~")


@pytest.mark.parametrize(("name", "seed_watts"), SEED_003)
def test_seed_003_system_draw(name: str, seed_watts: float) -> None:
    load = rig_power(load_rig(RIGS / name), "load")
    assert load.total_watts == pytest.approx(seed_watts, rel=TOLERANCE)
    assert load.gpus_watts == pytest.approx(
        seed_watts - {550: 100, 1050: 150, 2000: 200}[int(seed_watts)], rel=0.01
    )


@pytest.mark.parametrize(("name", "seed_watts"), SEED_003)
def test_seed_003_psu_rule(name: str, seed_watts: float) -> None:
    result = check_rig(load_rig(RIGS / name))
    assert result.psu_recommended_watts == pytest.approx(1.5 * result.power_load.total_watts)
    assert result.psu_recommended_watts == pytest.approx(1.5 * seed_watts, rel=TOLERANCE)
    below_rule = result.psu_watts < result.psu_recommended_watts
    assert below_rule == any(p.check == "psu" for p in result.problems)


def test_idle_is_far_below_load() -> None:
    rig = load_rig(RIGS / "seed003-quad-4090.yaml")
    idle, load = rig_power(rig, "idle"), rig_power(rig, "load")
    assert 0 < idle.total_watts < 0.25 * load.total_watts
    assert load.wall_watts == pytest.approx(load.total_watts / rig.psu.efficiency)


@pytest.mark.parametrize(
    "row",
    read_csv("parts/power_limit_curves.csv"),
    ids=lambda r: f"{r['accelerator']}-{r['workload']}-{r['power_limit_w']}",
)
def test_curves_reproduce_their_measured_points(row: dict[str, str]) -> None:
    stock = max(
        float(r["power_limit_w"])
        for r in read_csv("parts/power_limit_curves.csv")
        if r["accelerator"] == row["accelerator"] and r["workload"] == row["workload"]
    )
    effect = power_limit_effect(
        row["accelerator"], stock, row["workload"], float(row["power_limit_w"])
    )
    assert effect.relative_throughput == pytest.approx(float(row["relative_throughput"]), abs=1e-9)


def test_prefill_and_training_lose_more_than_decode() -> None:
    decode = power_limit_effect("rtx-3090", 350, "decode", 200).relative_throughput
    prefill = power_limit_effect("rtx-3090", 350, "prefill", 200).relative_throughput
    assert prefill < decode < 1.0
    assert power_limit_effect("rtx-3090", 350, "decode", 500).relative_throughput == 1.0


def test_gpu_without_its_own_curve_borrows_one() -> None:
    effect = power_limit_effect("rtx-4090", 450, "decode", 300)
    assert effect.curve_from == "rtx-3090"
    same_fraction = power_limit_effect("rtx-3090", 350, "decode", 350 * 300 / 450)
    assert effect.relative_throughput == pytest.approx(same_fraction.relative_throughput)


def test_power_limit_lowers_load_power() -> None:
    rig = load_rig(RIGS / "seed000-x9dri-ln4f-4x-3090-risers.yaml")
    assert rig_power(rig, "load").gpus_watts == pytest.approx(4 * 250)
    assert parts.rule("psu_headroom_factor") == 1.5
