"""Ranking builds by the user's objective, and training builds timed on a stated target."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from rigwise.design.candidates import Format, formats_for
from rigwise.design.designer import price_usd, rank_options
from rigwise.design.options import BuildOption
from rigwise.errors import UnknownNameError


def _option(on: str, price: float, speed: float, verdict: str = "ok", **kw: Any) -> BuildOption:
    base = BuildOption(
        kind="multi-gpu-box", on=on, nodes=1, network=None, format=Format(), parts=(),
        purchase_usd=price, decode_tokens_per_s=speed, time_to_train_s=None,
        power_watts_idle=50, power_watts_load=800, electricity_usd_per_year=300,
        tco_usd=price * 2, usd_per_million_tokens=1.0, rent_usd_per_hour=None,
        break_even_hours=None, power_limit=None, checks={"verdict": verdict, "problems": []},
        stale_prices=0,
    )  # fmt: skip
    return replace(base, **kw)


def test_warnings_cost_rank_and_cheaper_faster_clean_wins() -> None:
    titan = _option("2x titan-rtx", 2254, 16.0, "warnings", tco_usd=3991)
    rtx = _option("2x rtx-3090", 2144, 16.4, "ok", tco_usd=4131)
    assert [o.on for o in rank_options([titan, rtx])] == ["2x rtx-3090", "2x titan-rtx"]
    assert [o.on for o in rank_options([titan, rtx], "tco")] == ["2x titan-rtx", "2x rtx-3090"]


def test_within_the_price_bucket_the_faster_build_ranks_first() -> None:
    slow = _option("slow", 1000, 10.0)
    fast = _option("fast", 1050, 20.0)  # within 10 % of the price: same bucket
    dear = _option("dear", 2000, 40.0)
    assert [o.on for o in rank_options([dear, slow, fast])] == ["fast", "slow", "dear"]
    assert [o.on for o in rank_options([dear, slow, fast], "price")] == ["slow", "fast", "dear"]
    assert [o.on for o in rank_options([dear, slow, fast], "speed")] == ["dear", "fast", "slow"]


def test_renting_ranks_after_buying_by_default_and_by_its_cost_otherwise() -> None:
    rent = _option("rented h100", 0, 50.0, kind="rent", tco_usd=300)
    box = _option("box", 1500, 20.0)
    assert [o.on for o in rank_options([rent, box])] == ["box", "rented h100"]
    assert price_usd(rent) == 300
    assert [o.on for o in rank_options([rent, box], "price")] == ["rented h100", "box"]


def test_an_unknown_rank_names_the_choices() -> None:
    with pytest.raises(UnknownNameError):
        rank_options([], "cheap")


def test_finetune_formats_follow_the_method() -> None:
    assert [f.method for f in formats_for("finetune")] == ["lora", "qlora"]
    assert [f.quant for f in formats_for("finetune", "qlora")] == ["NF4"]
    assert [f.method for f in formats_for("finetune", "full")] == ["full"]
