"""``build_stages``: pipeline stages of tensor-parallel groups, and what too few devices say."""

from __future__ import annotations

import re

import pytest

from rigwise.errors import InputError
from rigwise.estimate.engine_overheads import EngineOverheads, device_class, engine_overheads
from rigwise.estimate.inference_stages import build_stages
from rigwise.hardware import Accelerator
from rigwise.hardware.nodes import parse_node


def _overheads(acc: Accelerator) -> EngineOverheads:
    return engine_overheads("vllm", device_class(acc))


def test_pipeline_stages_of_one_device_each() -> None:
    stages = build_stages(parse_node("3x rtx-3090"), "tensor", 1, 3, _overheads)
    assert [s.tp for s in stages] == [1, 1, 1]
    assert sum(s.layer_fraction for s in stages) == pytest.approx(1.0)


def test_too_few_devices_names_the_whole_node_stage_it_assumed() -> None:
    # before: "--pp 3 x --tp 1 needs more than the 3 devices given" for --pp 3 alone on 3
    # GPUs, when the stage it had taken was a whole node of 3 (3 x 3 = 9 devices)
    with pytest.raises(
        InputError, match=re.escape("--pp 3 stages of --tp 3 need 9 devices; 3 given.")
    ) as caught:
        build_stages(parse_node("3x rtx-3090"), "tensor", None, 3, _overheads)
    assert caught.value.hint is not None and "--tp 1 --pp 3" in caught.value.hint
    with pytest.raises(
        InputError, match=re.escape("--pp 3 stages of --tp 8 need 24 devices")
    ) as two:
        build_stages(parse_node("dgx-h100", 2), "tensor", None, 3, _overheads)
    assert two.value.hint is not None and "--tp 4 --pp 3" in two.value.hint  # 4 divides 8
    with pytest.raises(InputError, match=re.escape("--pp 16 stages of --tp 1 need 16 devices")):
        build_stages(parse_node("8x h100"), "tensor", 1, 16, _overheads)
