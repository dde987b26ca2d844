"""B200 training factors follow from published microbenchmarks, not from B200 training rows.

A B200 GEMM in a training step keeps the share of its burst microbenchmark rate that the H100
fits keep of H100's (efficiency_training.csv, matmul_efficiency_*[b200*]); a power cap costs
Blackwell speed with the exponent measured on a capped GB300 (power_cap_exponent[b200*])."""

from __future__ import annotations

import math

import pytest

from rigwise.estimate.compute import training_factors
from rigwise.estimate.power import power_point

# Burst rates, as fractions of the dense peak: torchao bench_matmul on a B200 (pytorch/ao PR
# #2427: bf16 4096^3 1.41 PFLOP/s of 2.25) and XLA's measured sm_100 table (fp8 4096^3 2.765 of
# 4.5 PFLOP/s); H100: torchao roofline_utils pct_achievable_gemm_tops 0.78.
B200_BF16_BURST = 1.41 / 2.25
B200_FP8_BURST = 2.765 / 4.5
H100_BURST = 0.78
B300_BURST = 0.82  # torchao roofline_utils, B300 'From measurement on hardware'


@pytest.mark.parametrize(
    ("precision", "scaling", "burst"),
    [
        ("bf16", "tensorwise", B200_BF16_BURST),
        ("fp8", "tensorwise", B200_FP8_BURST),
        ("fp8", "rowwise", B200_FP8_BURST),
        ("fp8", "mxfp8", B200_FP8_BURST),
    ],
)
def test_b200_gemms_keep_the_h100_share_of_the_burst_rate(
    precision: str, scaling: str, burst: float
) -> None:
    h100 = training_factors("h100-sxm").matmul_efficiency(precision, scaling)
    if scaling == "mxfp8":  # no H100 MXFP8: the tensorwise share, as the '*' row does
        h100 = training_factors("h100-sxm").matmul_efficiency("fp8", "tensorwise")
    for part in ("b200", "gb200"):  # GB200's GPU is B200 silicon
        got = training_factors(part).matmul_efficiency(precision, scaling)
        assert got == pytest.approx(burst * h100 / H100_BURST, abs=0.006)
    for part in ("b300", "gb300"):
        got = training_factors(part).matmul_efficiency(precision, scaling)
        assert got == pytest.approx(B300_BURST * h100 / H100_BURST, abs=0.006)


def test_a_power_cap_costs_blackwell_about_in_proportion_and_hopper_its_cube_root() -> None:
    # facebookexperimental/triton PR #2023: GB300 at 500 of 1400 W runs cuBLAS GEMMs at ~617
    # TFLOP/s against up to ~1600 at 1400 W.
    exponent = math.log(617 / 1600) / math.log(500 / 1400)
    for part in ("b200", "gb300"):
        assert training_factors(part).power_cap_exponent == pytest.approx(exponent, abs=0.01)
    b200 = training_factors("b200")
    capped = power_point(
        "b200",
        1000.0,
        750.0,
        exponent=b200.power_cap_exponent,
        utilisation=b200.power_utilisation,
    )
    assert capped.relative_throughput == pytest.approx(0.75**b200.power_cap_exponent, rel=1e-3)
    assert training_factors("h100-sxm").power_cap_exponent == pytest.approx(1 / 3, abs=0.01)
