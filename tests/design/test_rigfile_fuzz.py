"""Fuzzing rig files through `rigwise rig check`: a valid rig with keys replaced by wrong types,
zeros, negatives, huge counts and non-finite numbers, plus the YAML attacks, always ends in an
answer or a named error (exit 0, 1 or 2), never a traceback, within seconds."""

from __future__ import annotations

import copy
import os
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rigwise.cli import cli

EXAMPLES = int(os.environ.get("RIGWISE_FUZZ_EXAMPLES", "30"))
RIG = yaml.safe_load(
    """
name: 4x RTX 3090 on X10DRG-Q
motherboard: x10drg-q
cpu: xeon-e5-2699-v4
cpu_count: 2
ram: {module: ddr4-lrdimm-64gb-2400, count: 8}
psu: {name: corsair-ax1600i, count: 1}
circuit: us-120v-15a
gpus:
  - {name: rtx-3090, slot: 2}
  - {name: rtx-3090, slots: [4, 6]}
storage: [{name: nvme-gen4-2tb, count: 1, attach: cpu}]
"""
)
PLACES = (
    ("cpu_count",), ("ram", "count"), ("ram", "module"), ("psu", "count"), ("gpus",),
    ("gpus", 0, "slot"), ("gpus", 1, "slots"), ("gpus", 0, "name"), ("storage", 0, "count"),
    ("motherboard",), ("circuit",), ("fans",), ("gpus", 0, "power_limit_w"),
)  # fmt: skip
VALUES = (
    0, -1, 10**9, 10**400, 1.5, float("nan"), float("inf"), True, None, "", "x" * 300, [], {},
    [1] * 100, "rtx-4090",
)  # fmt: skip


def _set(document: dict[str, Any], place: tuple[Any, ...], value: Any) -> None:
    target: Any = document
    for step in place[:-1]:
        target = target[step]
    target[place[-1]] = value


def rig_check(path: Path) -> int:
    started = time.perf_counter()
    result = CliRunner().invoke(cli, ["rig", "check", str(path), "--json"])
    output = result.stdout + result.stderr
    assert time.perf_counter() - started < 10.0
    assert "Traceback" not in output and result.exit_code in (0, 1, 2), output[-1500:]
    return int(result.exit_code)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck),
          derandomize=EXAMPLES <= 30)  # fmt: skip
@given(edits=st.lists(st.tuples(st.sampled_from(PLACES), st.sampled_from(VALUES)), max_size=3))
def test_mutated_rig_files_never_crash(
    tmp_path_factory: pytest.TempPathFactory, edits: list[tuple[tuple[Any, ...], Any]]
) -> None:
    document = copy.deepcopy(RIG)
    for place, value in edits:
        try:
            _set(document, place, value)
        except (TypeError, KeyError, IndexError):  # an earlier edit replaced the parent
            continue
    path = tmp_path_factory.mktemp("rig") / "rig.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    rig_check(path)


@pytest.mark.parametrize(
    "text",
    [
        "a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]",
        "gpus: " + "[" * 50_000 + "]" * 50_000,
        "ram: {module: ddr4-lrdimm-64gb-2400, count: 1000000000}",
        "\xff\xfe",
    ],
)
def test_rig_file_attacks_exit_2(tmp_path: Path, text: str) -> None:
    path = tmp_path / "rig.yaml"
    path.write_text(text, encoding="utf-8")
    assert rig_check(path) == 2


@pytest.mark.parametrize(
    ("old", "new", "says"),
    [
        # before: exit 0 with one 32 GB module (true read as 1)
        ("count: 4", "count: true", "key 'ram.count' = True: Value error, true is not a number"),
        ("slots: [1, 5]", "slots: [true, 5]", "key 'gpus.0.slots': Value error, 0 = true is"),
        # before: exit 1 with the GPU gone (no lanes, no power, not in the parts list)
        ("slots: [1, 5]", "slots: []", "key 'gpus.0.slots': List should have at least 1 item"),
        # before: exit 0, the second 'cpu:' silently replaced the first
        ("cpu: epyc-7302p", "cpu: epyc-7302p\ncpu: epyc-7302p", "duplicate key 'cpu'"),
    ],
)
def test_a_bool_for_a_number_or_a_duplicate_key_is_named(
    tmp_path: Path, old: str, new: str, says: str
) -> None:
    text = (Path(__file__).parents[2] / "examples/rigs/good-2x-3090-nvlink.yaml").read_text()
    assert old in text
    path = tmp_path / "rig.yaml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    result = CliRunner().invoke(cli, ["rig", "check", str(path)])
    assert result.exit_code == 2 and says in result.stderr


def test_a_power_limit_the_card_refuses_is_named(tmp_path: Path) -> None:
    # before: exit 0 'ok': 'power_limit_w: 1' planned each card at 1 W (load 186 W at
    # the wall instead of 928 W), passing every PSU, connector and circuit check
    text = (Path(__file__).parents[2] / "examples/rigs/good-2x-3090-nvlink.yaml").read_text()
    path = tmp_path / "rig.yaml"
    path.write_text(text.replace("slots: [1, 5]}", "slots: [1, 5], power_limit_w: 1}"))
    result = CliRunner().invoke(cli, ["rig", "check", str(path)])
    assert result.exit_code == 2
    assert "power_limit_w 1 is outside what rtx-3090 accepts: 70-525 W" in result.stderr
