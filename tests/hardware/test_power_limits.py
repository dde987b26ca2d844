"""``--power-limit`` within what the device accepts (catalog/data/power_limit_ranges.csv)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from rigwise.api.infer import plan_inference
from rigwise.api.train import plan_training
from rigwise.catalog.loader import read_csv
from rigwise.cli import cli
from rigwise.errors import InputError
from rigwise.hardware import get_accelerator
from rigwise.hardware.power_limits import RANGES, check_power_limit, settable_range


@pytest.mark.parametrize(
    ("device", "low", "high"),
    [
        ("b200", 200.0, 1000.0),  # DGX B200 User Guide: AllowableMin 200, AllowableMax 1000
        ("h100-sxm", 200.0, 700.0),  # nvidia-smi: 'between 200.00 W and 700.00 W'
        ("a100-sxm-40gb", 100.0, 400.0),  # nvidia-smi -q: Min 100.00 W, Max 400.00 W
        ("a100-sxm-80gb", 100.0, 500.0),  # the datasheet: CTS boards up to 500 W
        ("rtx-4090", 0.2 * 450, 1.5 * 450),  # no published row: 0.2-1.5x its 450 W TDP
    ],
)
def test_the_range_is_the_published_one_or_the_generic_bound(
    device: str, low: float, high: float
) -> None:
    found = settable_range(get_accelerator(device))
    assert found is not None
    assert (found.min_watts, found.max_watts) == pytest.approx((low, high))


def test_the_generic_bound_holds_every_published_range() -> None:
    """The '*' row's fractions are drawn from the rows above it: each published range lies
    within min_tdp_fraction-max_tdp_fraction of its device's TDP."""
    rows = read_csv(RANGES)
    generic = rows[-1]
    assert generic["accelerator"] == "*" and all(r["source"] for r in rows)
    low, high = float(generic["min_tdp_fraction"]), float(generic["max_tdp_fraction"])
    ids = {"b200": "b200", "h100-sxm": "h100-sxm", "a100-sxm*": "a100-sxm-40gb"}
    ids["a100-sxm-80gb"] = "a100-sxm-80gb"
    for row in rows[:-1]:
        tdp = get_accelerator(ids[row["accelerator"]]).tdp_watts
        assert low * tdp <= float(row["min_watts"]) and float(row["max_watts"]) <= high * tdp


def test_a_partner_board_limit_of_a_geforce_card_is_planned() -> None:
    """The rtx-2080-ti row (100-280 W, one 250 W reference board) refused 320 W, which the
    Founders Edition and partner boards accept (MSI's Lightning Z: up to 350 W)."""
    plan = plan_inference(model="llama-3.1-8b", on="rtx-2080-ti", power_limit=320, levers=False)
    assert plan.power is not None
    found = settable_range(get_accelerator("rtx-2080-ti"))
    assert found is not None and found.max_watts >= 350 and found.basis != "published"


def test_a_limit_out_of_range_names_the_device_and_its_range() -> None:
    with pytest.raises(InputError) as low:
        check_power_limit(150.0, [get_accelerator("b200")])
    assert low.value.message == (
        "--power-limit 150 W is outside what b200 accepts: 200-1000 W (published)."
    )
    assert low.value.hint == (
        "Give a limit of 200-1000 W per device, or leave --power-limit out for the stock 1000 W."
    )
    check_power_limit(200.0, [get_accelerator("b200")])  # the published minimum is allowed
    check_power_limit(None, [get_accelerator("b200")])


def test_infer_and_train_refuse_it_before_planning() -> None:
    """Before: --power-limit 1 planned a 1 W cap (exit 0), whether or not the model fit."""
    with pytest.raises(InputError, match="outside what rtx-4090 accepts: 90-675 W"):
        plan_inference(model="llama-3.1-8b", on="rtx-4090", power_limit=1, levers=False)
    with pytest.raises(InputError, match="outside what rtx-4090 accepts"):  # does not fit
        plan_inference(model="llama-3.1-405b", on="rtx-4090", power_limit=1, levers=False)
    with pytest.raises(InputError, match="800 W is outside what h100-sxm accepts: 200-700 W"):
        plan_training(model="llama-3.1-8b", on="8x h100-sxm", power_limit=800)
    capped = plan_inference(model="llama-3.1-8b", on="h100-sxm", power_limit=200, levers=False)
    assert capped.power is not None


def test_the_cli_exits_2_with_the_json_error_shape() -> None:
    args = ["infer", "llama-3.1-8b", "--on", "2x rtx-3090", "--power-limit", "1", "--json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    assert json.loads(result.stdout) == {
        "error": "--power-limit 1 W is outside what rtx-3090 accepts: 70-525 W (0.2-1.5x its "
        "350 W TDP; no published range).",
        "hint": "Give a limit of 70-525 W per device, or leave --power-limit out for the stock "
        "350 W.",
    }
