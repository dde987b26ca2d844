"""The fake backend's degraded machine produces each warning with its fix; a healthy one none."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigwise.errors import InputError
from rigwise.probe import FakeBackend, probe
from rigwise.probe.fake import load_fake_machine
from rigwise.probe.report import GpuInfo, MemoryInfo, PcieLink
from rigwise.probe.warnings import check, rules

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def degraded():  # type: ignore[no-untyped-def]
    return probe(FakeBackend(load_fake_machine(HERE / "fake_degraded.yaml")))


def _by_rule(report) -> dict:  # type: ignore[no-untyped-def,type-arg]
    return {(w.rule, w.device): w for w in report.warnings}


def test_degraded_link_warns_with_a_fix(degraded) -> None:  # type: ignore[no-untyped-def]
    found = _by_rule(degraded)
    width = found[("pcie_width_below_max", "gpu0")]
    assert "x4" in width.message and "x16" in width.message
    assert "25%" in width.message
    assert "slot" in width.fix
    gen = found[("pcie_gen_below_max", "gpu0")]
    assert "Gen1" in gen.message and "Gen4" in gen.message
    assert "BIOS" in gen.fix
    # The healthy second card gets no link warning.
    assert ("pcie_width_below_max", "gpu1") not in found
    assert ("pcie_gen_below_max", "gpu1") not in found


def test_power_limit_below_default(degraded) -> None:  # type: ignore[no-untyped-def]
    power = _by_rule(degraded)[("power_limit_below_default", "gpu0")]
    assert "250 W" in power.message and "450 W" in power.message
    assert "nvidia-smi -i 0 -pl 450" in power.fix
    assert ("power_limit_below_default", "gpu1") not in _by_rule(degraded)


def test_numa_split_and_ram_below_vram(degraded) -> None:  # type: ignore[no-untyped-def]
    rules_fired = {w.rule for w in degraded.warnings}
    assert "gpus_split_across_numa" in rules_fired
    ram = next(w for w in degraded.warnings if w.rule == "ram_below_vram")
    assert "32 GB" in ram.message and "48 GB" in ram.message


def test_healthy_machine_has_no_warnings() -> None:
    report = probe(FakeBackend(load_fake_machine(HERE / "fake_healthy.json")))
    assert report.gpus[0].catalog_id is not None  # the H100 is matched in the catalog
    assert report.warnings == ()


def test_fake_json_keys_and_topology(degraded) -> None:  # type: ignore[no-untyped-def]
    data = degraded.to_dict()
    assert data["gpu_topology"] == [["X", "SYS"], ["SYS", "X"]]
    assert data["gpus"][0]["pcie"] == {
        "current_gen": 1,
        "max_gen": 4,
        "current_width": 4,
        "max_width": 16,
    }
    assert all(set(w) >= {"message", "fix"} for w in data["warnings"])
    assert data["software"]["driver_version"] == "550.54.14"


def test_thresholds_come_from_the_rules_file() -> None:
    threshold = rules()["power_limit_below_default"].threshold
    assert threshold is not None
    gpu = GpuInfo(
        0,
        "NVIDIA GeForce RTX 4090",
        "nvidia",
        24e9,
        catalog_id="rtx-4090",
        power_default_limit_watts=400.0,
        power_limit_watts=400.0 * (threshold + 0.01),
    )
    just_below = GpuInfo(
        0,
        "NVIDIA GeForce RTX 4090",
        "nvidia",
        24e9,
        catalog_id="rtx-4090",
        power_default_limit_watts=400.0,
        power_limit_watts=400.0 * (threshold - 0.01),
    )
    memory = MemoryInfo(total_bytes=1e12)
    assert not [w for w in check(memory, (gpu,)) if w.rule == "power_limit_below_default"]
    assert [w for w in check(memory, (just_below,)) if w.rule == "power_limit_below_default"]


def test_unknown_gpu_gets_a_catalog_warning() -> None:
    gpu = GpuInfo(0, "Mystery Accelerator 9000", "nvidia", 8e9, pcie=PcieLink(4, 4, 16, 16))
    found = check(MemoryInfo(total_bytes=64e9), (gpu,))
    assert [w.rule for w in found] == ["gpu_not_in_catalog"]


def test_every_rule_has_a_source_and_fix() -> None:
    table = rules()
    assert {
        "pcie_width_below_max",
        "pcie_gen_below_max",
        "power_limit_below_default",
        "gpus_split_across_numa",
        "ram_below_vram",
    } <= set(table)
    assert all(rule.fix for rule in table.values())


def test_bad_fake_file_is_an_input_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("gpus:\n  - name: X\n    memory: lots\n")
    with pytest.raises(InputError, match=r"bad\.yaml"):
        load_fake_machine(bad)
    with pytest.raises(InputError, match="not found"):
        load_fake_machine(tmp_path / "missing.yaml")


def test_idle_gpu_link_generation_is_not_a_warning_but_width_is() -> None:
    # At idle (P8) the driver drops the link to Gen1 on purpose; a narrow link is still a fault.
    idle = GpuInfo(
        0,
        "NVIDIA GeForce RTX 4090",
        "nvidia",
        24e9,
        catalog_id="rtx-4090",
        pcie=PcieLink(1, 4, 8, 16),
        performance_state=8,
    )
    busy = GpuInfo(
        0,
        "NVIDIA GeForce RTX 4090",
        "nvidia",
        24e9,
        catalog_id="rtx-4090",
        pcie=PcieLink(1, 4, 8, 16),
        performance_state=0,
    )
    memory = MemoryInfo(total_bytes=1e12)
    assert [w.rule for w in check(memory, (idle,))] == ["pcie_width_below_max"]
    assert [w.rule for w in check(memory, (busy,))] == [
        "pcie_width_below_max",
        "pcie_gen_below_max",
    ]
