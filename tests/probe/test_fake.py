"""The fake hardware file (``RIGWISE_FAKE_HARDWARE``): a bool is no number."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigwise.errors import InputError
from rigwise.probe.fake import load_fake_machine


@pytest.mark.parametrize(
    ("text", "says"),
    [
        # before: each read as 1 (pydantic's lax mode takes a bool for a number)
        ("cpu: {cores: true}", "key 'cpu.cores' = True: Value error, true is not a number"),
        (
            "gpus: [{name: rtx-4090, memory: 24GB, power_limit_watts: true}]",
            "key 'gpus.0.power_limit_watts' = True: Value error, true is not a number",
        ),
        (
            "gpus: [{name: rtx-4090, memory: 24GB, pcie: {current_width: false}}]",
            "key 'gpus.0.pcie.current_width' = False: Value error, false is not a number",
        ),
    ],
)
def test_a_bool_where_a_number_goes_is_named(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "fake.yaml"
    path.write_text(text + "\n")
    with pytest.raises(InputError, match=says):
        load_fake_machine(path)


def test_flags_stay_flags(tmp_path: Path) -> None:
    path = tmp_path / "fake.yaml"
    path.write_text("network: [{name: eth0, up: false, speed_bits_per_s: 1e9}]\n")
    assert load_fake_machine(path).network[0].up is False


GPU = "{name: rtx-4090, memory: 24GB"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        # before: 30,000 GPUs (an 840 KB file) built a 30,000 x 30,000 topology: > 5 GB, minutes
        ("gpus: [" + ", ".join(["{name: a, memory: 1}"] * 1025) + "]", "at most 1024 items"),
        # before: each read and reported ('runs its PCIe link at Gen99, below the Gen-1 ...')
        (f"gpus: [{GPU}, power_limit_watts: -5}}]", "'gpus.0.power_limit_watts' = -5"),
        (f"gpus: [{GPU}, power_limit_watts: .inf}}]", "'gpus.0.power_limit_watts' = inf"),
        (f"gpus: [{GPU}, pcie: {{current_gen: 99}}}}]", "'gpus.0.pcie.current_gen' = 99"),
        (f"gpus: [{GPU}, numa_node: -7}}]", "'gpus.0.numa_node' = -7"),
        ("gpus: [{name: '', memory: 24GB}]", "'gpus.0.name' = ''"),
        ("network: [{name: eth0, speed_bits_per_s: -1}]", "'network.0.speed_bits_per_s' = -1"),
        # before: served to Prometheus / reported by bench as given
        (f"gpus: [{GPU}, sample: {{power_watts: -5}}}}]", "power_watts = -5 must be finite"),
        (f"gpus: [{GPU}, sample: {{utilization_ratio: 7}}}}]", "= 7 must be from 0 to 1"),
        (
            f"gpus: [{GPU}, measured: {{matmul_bf16: -1e14}}}}]",
            "measured figures must be finite and > 0",
        ),
    ],
)
def test_a_machine_out_of_bounds_is_named(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "fake.yaml"
    path.write_text(text + "\n")
    with pytest.raises(InputError, match=says.replace(".", r"\.")):
        load_fake_machine(path)
