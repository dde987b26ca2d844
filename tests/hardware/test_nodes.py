"""``parse_node``: a node description missing a part says which part is missing."""

from __future__ import annotations

import pytest

from rigwise.errors import InputError, UnknownNameError
from rigwise.hardware import parse_node


@pytest.mark.parametrize("text", ["+nvlink", " + nvlink4"])
def test_a_link_without_a_device_is_named(text: str) -> None:
    # before: "Unknown GPU ''. Did you mean: xeon-w9-3495x-8ch-ddr5-4800, ..."
    with pytest.raises(InputError, match="No device before '\\+'") as caught:
        parse_node(text)
    assert not isinstance(caught.value, UnknownNameError)
    assert parse_node("2x rtx-3090+nvlink").accelerator_count == 2
