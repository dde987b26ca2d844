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
