"""Hand-made accelerators so the rig checks are tested without the GPU catalog's numbers."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from design_helpers import make_gpu

from rigwise.hardware import Accelerator

FAKE_GPUS = {
    "rtx-3090": make_gpu(),
    "rtx-4090": make_gpu("rtx-4090", tdp=450.0, connectors="1x 16-pin 12VHPWR", nvlink=0.0),
    "p40": make_gpu("p40", tdp=250.0, width=2.0, connectors="1x 8-pin EPS", nvlink=0.0),
}


@pytest.fixture
def gpu_lookup() -> Callable[[str], Accelerator]:
    return FAKE_GPUS.__getitem__
