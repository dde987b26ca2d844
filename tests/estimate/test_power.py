"""Power caps: speed kept and power drawn, for training and `infer --power-limit`."""

from __future__ import annotations

import pytest

from rigwise.api.infer import plan_inference
from rigwise.estimate.power import power_point
from rigwise.serialize import to_jsonable


def test_a_measured_training_curve_is_used_where_the_catalog_has_one() -> None:
    point = power_point("rtx-3090", 350.0, 280.0, exponent=0.33, utilisation=0.8)
    # Puget Systems 4x RTX 3090: 280 W keeps 95 % of the stock throughput.
    assert point.relative_throughput == pytest.approx(0.95)
    assert point.curve.startswith("measured") and point.drawn_watts == pytest.approx(224.0)


def test_without_a_curve_cmos_scaling_applies_and_no_cap_is_stock() -> None:
    capped = power_point("h100-sxm", 700.0, 500.0, exponent=0.33, utilisation=0.8)
    assert capped.relative_throughput == pytest.approx((500 / 700) ** 0.33)
    stock = power_point("h100-sxm", 700.0, None, exponent=0.33, utilisation=0.8)
    assert stock.relative_throughput == 1.0 and stock.drawn_watts == pytest.approx(560.0)
    above = power_point("h100-sxm", 700.0, 900.0, exponent=0.33, utilisation=0.8)
    assert above.limit_watts == 700.0


@pytest.mark.parametrize("device", ["rtx-3090", "h100-sxm"])
def test_infer_power_limit_energy_per_token_falls_with_the_cap(device: str) -> None:
    plans = [
        plan_inference(model="llama-3.1-8b", on=device, power_limit=watts, levers=False)
        for watts in (350, 300, 250, 200)
    ]
    decode_j = [p.power["decode_joules_per_token"] for p in plans if p.power]
    prefill_j = [p.power["prefill_joules_per_token"] for p in plans if p.power]
    assert len(decode_j) == 4 and decode_j == sorted(decode_j, reverse=True)
    # Prefill is compute-bound: above the knee of the curve (the 3090's measured prefill keeps
    # 85 % at 250 W, 60 % at 200 W) its energy per token falls too.
    assert prefill_j[:3] == sorted(prefill_j[:3], reverse=True)
    # Decode is memory-bound: it keeps more of its speed than compute-bound prefill.
    last = plans[-1].power
    assert last is not None
    assert last["decode_relative_throughput"] > last["compute_relative_throughput"]


def test_infer_without_a_cap_reports_no_power() -> None:
    plan = plan_inference(model="llama-3.1-8b", on="rtx-4090", levers=False)
    assert plan.power is None and to_jsonable(plan)["power"] is None
