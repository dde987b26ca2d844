"""The Done-when of `rigwise oi simulate`: a 30-day run with the named keys (its speed is in
benchmarks/bench_fit_oi.py); each fault kind latches its alarm within one control period, stops
actuation, never overflows, and the health index shows ALARM until an acknowledgement after the
fault clears."""

from __future__ import annotations

import pytest
from tests.oi.simhelp import advance

from rigwise.errors import InputError
from rigwise.oi.constants import load_constants
from rigwise.oi.faults import FaultKind, parse_fault
from rigwise.oi.interlocks import FAULT_ALARMS
from rigwise.oi.simulate import simulate

DAY = 86400.0


def test_thirty_days_with_the_named_keys() -> None:
    # Its speed (< 10 s) is measured in benchmarks/bench_fit_oi.py.
    report = simulate(days=30, seed=1)
    for key in (
        "health_index",
        "alarms",
        "max_housing_volume_ml",
        "housing_capacity_ml",
        "dosed_ml",
        "removed_ml",
        "ledger_error_ml",
    ):
        assert hasattr(report, key)
    assert report.alarms == []
    assert report.health_index not in ("ALARM", "UNKNOWN") and report.health_score > 80
    assert 55 <= report.exchanges <= 60  # one every 12 h
    assert report.max_housing_volume_ml < report.housing_capacity_ml
    # 2 exchanges/day x 0.75 mL removed; the feed also makes up evaporation
    assert report.removed_ml == pytest.approx(report.exchanges * 0.75, abs=0.01)
    assert report.dosed_ml == pytest.approx(report.removed_ml + report.evaporated_ml, abs=0.1)
    assert report.ledger_error_ml < 0.03 and report.ledger_max_abs_error_ml < 0.05
    assert abs(report.final_temperature_c - 37.0) < 0.3


@pytest.mark.parametrize("kind", list(FaultKind))
def test_each_fault_latches_its_alarm_within_one_period_and_stops_actuation(
    kind: FaultKind,
) -> None:
    fault = parse_fault(f"{kind.value}@1d+6h")
    report = simulate(days=2.0, seed=2, faults=(fault,), acks=(1.1 * DAY, 1.5 * DAY))
    expected = FAULT_ALARMS[kind.value].value
    rows = [a for a in report.alarms if a["kind"] == expected]
    assert rows, f"{kind.value} latched no {expected} alarm: {report.alarms}"
    assert rows[0]["latency_from_fault_s"] <= report.period_s
    assert rows[0]["cleared_at_s"] is not None and rows[0]["acked_at_s"] == 1.5 * DAY
    assert report.pump_commits_during_alarm == 0
    assert report.dry_pump_events == 0 and report.overflow_events == 0
    assert report.max_housing_volume_ml <= report.housing_capacity_ml


@pytest.mark.parametrize("kind", ["occlusion", "stuck_heater", "sensor_nan", "comms_loss"])
def test_health_shows_alarm_until_ack_after_the_fault_clears(make_rig, kind: str) -> None:  # type: ignore[no-untyped-def]
    fault = parse_fault(f"{kind}@1d+2h")
    rig = make_rig((fault,))
    advance(rig, DAY + 60)
    ctrl = rig.controller
    assert ctrl.index().status == "ALARM"
    commits = sum(p.commits for p in rig.pumps.values())
    advance(rig, DAY + 3 * 3600)  # the fault has cleared, nobody acknowledged
    assert all(not a.condition_active for a in ctrl.book.latched)
    assert ctrl.index().status == "ALARM"
    assert sum(p.commits for p in rig.pumps.values()) == commits  # still no actuation
    released, refused = ctrl.ack("all")
    assert released and not refused
    assert ctrl.index().status != "ALARM"
    advance(rig, DAY + 5 * 3600)
    assert sum(p.commits for p in rig.pumps.values()) > commits  # maintenance resumed


def test_ack_while_the_condition_is_present_is_refused(make_rig) -> None:  # type: ignore[no-untyped-def]
    rig = make_rig((parse_fault("occlusion@1h+2h"),))
    advance(rig, 1.5 * 3600)
    released, refused = rig.controller.ack("occlusion")
    assert not released and [a.kind.value for a in refused] == ["occlusion"]
    assert rig.controller.index().status == "ALARM"
    kinds = [e.kind for e in rig.controller.store.events(("ack_refused",))]
    assert kinds == ["ack_refused"]


def test_occlusion_release_is_not_a_bolus(make_rig, constants) -> None:  # type: ignore[no-untyped-def]
    """An occlusion during an exchange: after release and ack no dose exceeds a sub-dose."""
    rig = make_rig((parse_fault("occlusion@43260s+1h"),))  # an exchange opens at 12 h
    advance(rig, 43200 + 3 * 3600)
    rig.controller.ack("all")
    advance(rig, 43200 + 5 * 3600)
    doses = [e.data["ml"] for e in rig.controller.store.events(("dose_intent",))]
    assert doses and max(doses) <= constants["sub_dose_cap_ml"] + 1e-9


@pytest.mark.parametrize("text", ["bogus@1d", "occlusion", "occlusion@x", "occlusion@1d+0s"])
def test_bad_fault_specs_name_the_fix(text: str) -> None:
    with pytest.raises(InputError) as err:
        parse_fault(text)
    assert text.split("@")[0] in str(err.value) or "fault" in str(err.value).lower()


def test_fault_or_ack_after_the_end_is_refused_not_silently_skipped() -> None:
    """A fault or an acknowledgement the run never reaches would report a clean run."""
    # before: 'Fault occlusion:feed@3.456e+07s+21600s starts after ... (1 days = 86400s)' and
    # 'Ack time 172800s': the times as no one wrote them; now as people write them
    with pytest.raises(InputError, match="occlusion:feed at 400 d starts after the sim") as fault:
        simulate(days=1, faults=(parse_fault("occlusion@400d"),))
    assert "simulate more --days" in (fault.value.hint or "")
    with pytest.raises(InputError, match=r"Ack time 2 d is after the simulation's end \(1 d\)"):
        simulate(days=1, acks=(172_800.0,))
    # One that starts inside the run still runs (and raises its alarm).
    report = simulate(days=1, faults=(parse_fault("occlusion@12h+1h"),))
    assert report.alarms


@pytest.mark.parametrize(
    ("kwargs", "said"),
    [
        ({"period_s": 3601.0}, r"--period 1 h \(3601 s\) is out of range"),
        ({"period_s": 0.5}, "--period 500 ms is out of range"),
        ({"acks": (86_401.0,)}, r"Ack time 1 d \(86401 s\) is after the simulation's end \(1 d\)"),
        ({"acks": (90_000.0,)}, r"Ack time 1.04 d \(90000 s\) is after"),
    ],
)
def test_a_time_that_rounds_is_also_said_in_seconds(kwargs: dict, said: str) -> None:
    """'--period 3601' said '--period 1 h is out of range. Use 1s to 1h.' and '--ack 86401s'
    'Ack time 1 d is after the simulation's end (1 d)': the bad value rounded away."""
    with pytest.raises(InputError, match=said):
        simulate(days=1, **kwargs)


def test_a_period_past_the_heater_loops_sampling_limit_is_refused() -> None:
    """'--days 2 --period 10min' (no fault) latched over_temperature at 960-1200 s: the heater
    loop sampled once per 10-min thermal time constant and overshot. The limit, 4 samples per
    rise time (2.2 time constants), is 330 s where a stuck heater cannot reach heater-off."""
    weak = load_constants().with_overrides(heater_gain_c=15.0)  # stuck on, it stays under 38.5
    with pytest.raises(InputError, match=r"overshoots into a false over-temperature") as caught:
        simulate(days=1, period_s=600.0, constants=weak)
    assert "thermal time constant is 10 min" in caught.value.message
    assert caught.value.hint == "Use 1s to 5.5 min."


@pytest.mark.parametrize("fault", ["stuck_heater@1d", "sensor_oob@1d", "sensor_nan@1.3d"])
def test_a_period_the_check_allows_keeps_every_fault_to_its_own_alarm(fault: str) -> None:
    """330 s passed the sampling rule, but a heater stuck on for one period ran the housing
    past the safe state before its readback was checked (over_temperature_critical latched,
    no heater_fault in time), and a temperature sensor's recovery overshot to it. The period
    is now also held to the stuck heater's rise from setpoint to heater-off: 97 s."""
    with pytest.raises(InputError, match=r"heater stuck on for one period") as caught:
        simulate(days=1, period_s=98.0)
    assert caught.value.hint == "Use 1s to 1.62 min (97 s)."
    for seed in (1, 2):
        report = simulate(days=2, seed=seed, period_s=97.0, faults=(parse_fault(fault),))
        assert [a["kind"] for a in report.alarms] in (["heater_fault"], ["sensor_fault"])
        assert all(a["latency_from_fault_s"] <= 97.0 for a in report.alarms)
