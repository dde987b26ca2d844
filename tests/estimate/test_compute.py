"""estimate/compute.training_factors: a calibration the planner can use, or bad input."""

from __future__ import annotations

import pytest

from rigwise.errors import InputError
from rigwise.estimate.compute import training_factors


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        # before: planned, 'fits', a negative efficiency at 2.5M tokens/s, an infinite one too
        ("matmul_efficiency_bf16", -3.0, "not a fraction of peak"),
        ("matmul_efficiency_bf16", float("inf"), "not a fraction of peak"),
        ("bus_efficiency_nvlink", 0.0, "not a fraction of peak"),
        ("goodput", 1.2, "not a share from 0 to 1"),
        ("gemm_half_dim", -1.0, "not a finite number >= 0"),
        ("step_overhead_s", float("nan"), "not a finite number >= 0"),
    ],
)
def test_a_calibration_out_of_bounds_is_bad_input(key: str, value: float, message: str) -> None:
    with pytest.raises(InputError, match=message):
        training_factors("h100-sxm", {key: value})


def test_calibrations_in_bounds_set_their_factor() -> None:
    factors = training_factors(
        "h100-sxm", {"matmul_efficiency_bf16": 0.7, "goodput": 1.0, "gemm_half_dim": 0.0}
    )
    assert (factors.matmul_efficiency_bf16, factors.goodput, factors.gemm_half_dim) == (
        0.7,
        1.0,
        0.0,
    )
