"""The designer with a fake planner (physics of our own) and, once, with the real planners."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from design_helpers import make_gpu

from rigwise.design.designer import Design, DesignRequest, design, pareto_frontier
from rigwise.design.planner import Estimate

TODAY = dt.date(2026, 11, 21)
POOL = {
    g.id: g
    for g in (
        make_gpu("rtx-3090", price=700.0),
        make_gpu(
            "rtx-4090",
            tdp=450.0,
            connectors="1x 16-pin 12VHPWR",
            nvlink=0.0,
            price=1600.0,
            bandwidth_gb_s=1008.0,
        ),
        make_gpu(
            "p40",
            memory_gb=24,
            tdp=250.0,
            width=2.0,
            connectors="1x 8-pin EPS",
            price=300.0,
            bandwidth_gb_s=347.0,
            rent=None,
        ),
        make_gpu(
            "mac-128",
            memory_gb=128,
            tdp=80.0,
            kind="unified",
            price=4700.0,
            bandwidth_gb_s=400.0,
            rent=None,
        ),
    )
}
WEIGHTS = {"F16": 141e9, "Q8_0": 75e9, "Q4_K_M": 43e9, "IQ4_XS": 38e9, "Q3_K_M": 34e9}


def fake_planner(**kw: Any) -> Estimate:
    """Decode = bandwidth / weights (layer split: one GPU's bandwidth at a time)."""
    on: str = kw["on"]
    count, _, gpu_id = on.rpartition("x ")
    count_n = int(count) if count else 1
    gpu = POOL[gpu_id]
    weights = WEIGHTS[kw["quant"]]
    memory = gpu.memory_bytes * count_n * kw["nodes"]
    if weights > 0.9 * memory:
        return Estimate(fits=False, reason="does not fit")
    speedup = count_n if kw["split"] == "tensor" else 1
    tps = gpu.memory_bandwidth_bytes_per_s * 0.7 / weights * speedup
    return Estimate(fits=True, decode_tokens_per_s=tps)


def run(**changes: Any) -> Design:
    settings = {"target_tps": 15, "budget_usd": 3000, "today": TODAY, "top": 50, **changes}
    request = DesignRequest(model="fake-70b", **settings)
    return design(request, planner=fake_planner, accelerators=list(POOL.values()))


def test_options_meet_target_and_budget() -> None:
    result = run()
    assert result.options
    for option in result.options:
        assert option.decode_tokens_per_s >= 15
        assert option.purchase_usd <= 3000 or option.kind == "rent"
        assert option.checks["verdict"] in ("ok", "warnings")
        assert all(p.price_date for p in option.parts if p.kind != "rental")
    assert sum(result.rejected.values()) > 0
    assert "over budget" in result.rejected and "does not fit in memory" in result.rejected
    for reason, count in result.rejected.items():
        assert 0 < len(result.rejected_examples[reason]) <= min(count, 3)


def test_frontier_has_no_dominated_option() -> None:
    result = run()
    frontier = result.frontier
    for a in frontier:
        assert not any(b.tco_usd < a.tco_usd and b.speed >= a.speed for b in result.options)
    costs = [o.tco_usd for o in frontier]
    assert costs == sorted(costs)
    assert pareto_frontier(list(reversed(frontier))) == frontier


def test_no_budget_no_target_lists_more_and_slow_ones() -> None:
    loose = design(
        DesignRequest(model="fake-70b", today=TODAY, top=100),
        planner=fake_planner,
        accelerators=list(POOL.values()),
    )
    assert len(loose.options) > len(run().options)
    assert any(o.kind == "apple" for o in loose.options)
    assert any(o.kind == "multi-node" for o in loose.options)


def test_power_limit_slows_decode_a_little() -> None:
    base = {o.on: o for o in run(budget_usd=None).options if o.kind != "rent"}
    limited = {
        o.on: o for o in run(budget_usd=None, power_limit_watts=250).options if o.kind != "rent"
    }
    common = set(base) & set(limited)
    assert common
    for on in common:
        if limited[on].power_limit is not None:
            assert limited[on].decode_tokens_per_s < base[on].decode_tokens_per_s
            assert limited[on].power_watts_load < base[on].power_watts_load


def test_a_power_limit_below_what_a_card_accepts_builds_no_box_of_it() -> None:
    """``build --power-limit 5`` ranked boxes of GPUs capped at 5 W (0.1 tok/s), which
    ``nvidia-smi -pl`` refuses and ``infer --power-limit 5`` calls bad input: a rejection now."""
    stock = run(budget_usd=None, target_tps=None)
    capped = run(budget_usd=None, target_tps=None, power_limit_watts=5)
    assert any(o.kind not in ("rent", "apple") for o in stock.options)
    assert capped.options and all(o.kind in ("rent", "apple") for o in capped.options)
    assert capped.rejected.get("power limit below what the GPU accepts", 0) > 0
    above = run(budget_usd=None, target_tps=None, power_limit_watts=10_000)  # stock: min(., TDP)
    assert {o.on for o in above.options} == {o.on for o in stock.options}


def test_nothing_feasible_is_a_result() -> None:
    result = run(target_tps=10_000)
    assert result.options == ()
    assert result.rejected.get("below target speed", 0) > 0
    assert any("Nothing feasible" in n for n in result.notes)


def test_stale_prices_in_options() -> None:
    result = design(
        DesignRequest(model="fake-70b", today=dt.date(2035, 1, 1), top=5),
        planner=fake_planner,
        accelerators=list(POOL.values()),
    )
    owned = [o for o in result.options if o.kind != "rent"]
    assert owned and all(o.stale_prices > 0 for o in owned)


@pytest.mark.slow
def test_real_planners_confirm_the_70b_build() -> None:
    """Issue 5 done-when: llama-3.1-70b, 15 tok/s, $3000, used parts."""
    from rigwise.api.infer import plan_inference

    request = DesignRequest(
        model="llama-3.1-70b", task="infer", target_tps=15, budget_usd=3000, used=True, today=TODAY
    )
    result = design(request)
    assert result.options, result.rejected
    assert result.rejected.get("over budget", 0) > 0
    for option in result.options:
        options = {
            "model": "llama-3.1-70b",
            "on": option.on,
            "quant": option.format.quant,
            "levers": False,
        }
        if option.nodes > 1:
            options.update(nodes=option.nodes, network=option.network)
        if option.format.engine:
            options["engine"] = option.format.engine
        if option.format.split:
            options["split"] = option.format.split
        plan = plan_inference(**options)
        assert plan.fits
        assert plan.decode.tokens_per_s >= 15
        if option.kind != "rent":
            assert option.purchase_usd <= 3000


def test_multi_node_options_buy_every_node_and_a_nic_each() -> None:
    loose = design(
        DesignRequest(model="fake-70b", today=TODAY, top=200),
        planner=fake_planner,
        accelerators=list(POOL.values()),
    )
    multi = [o for o in loose.options if o.kind == "multi-node"]
    assert multi
    for option in multi:
        gpu_line = next(p for p in option.parts if p.kind == "gpu")
        assert gpu_line.quantity == option.nodes * int(
            option.on.split("x ")[0] if "x " in option.on else 1
        )
        nic = [p for p in option.parts if p.kind == "network_card"]
        assert nic and nic[0].quantity == option.nodes
        assert option.purchase_usd == pytest.approx(sum(p.total_usd for p in option.parts))


def test_form_desktop_keeps_single_socket_atx_boards() -> None:
    result = run(budget_usd=None, form="desktop")
    boards = {
        p.name
        for o in result.options
        if o.kind not in ("rent", "apple")
        for p in o.parts
        if p.kind == "motherboard"
    }
    assert boards
    from rigwise.design import parts

    for board in parts.motherboards():
        if board.name in boards:
            assert board.form_factor == "atx" and board.cpu_sockets == 1


def test_break_even_against_renting_the_same_gpus() -> None:
    result = run(budget_usd=None)
    owned = [o for o in result.options if o.kind == "multi-gpu-box" and "rtx-3090" in o.on]
    assert owned
    for option in owned:
        count = int(option.on.split("x ")[0])
        assert option.rent_usd_per_hour == pytest.approx(0.4 * count)
        per_hour_power = option.power_watts_load / 1000 * option_kwh_price()
        assert option.break_even_hours == pytest.approx(
            option.purchase_usd / (option.rent_usd_per_hour - per_hour_power)
        )


def option_kwh_price() -> float:
    from rigwise.design.costs import electricity_price

    return electricity_price()
