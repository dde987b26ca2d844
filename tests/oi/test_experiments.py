"""The experiment queue: refused during a latched alarm and admitted after; two experiments
cannot hold the same electrodes; clean-up (stimulation off, lease released) when a run fails;
stimulation caps; results with provenance."""

from __future__ import annotations

import numpy as np
import pytest
from tests.oi.simhelp import advance

from rigwise.errors import InputError
from rigwise.oi import experiments as ex
from rigwise.oi.faults import parse_fault
from rigwise.oi.mea import SAMPLE_RATE_HZ, SimMea, detect_spikes
from rigwise.oi.runner import experiments_tick
from rigwise.oi.store import Store

SPEC = """
name: {name}
organoid: org-1@v1
mea: mea-1@v1
electrodes: {electrodes}
stimulation: {{amplitude_ua: 4, phase_us: 200, frequency_hz: 10, pulses: 50}}
recording_windows_s: [[0, 10], [10, 20]]
max_duration_s: 60
"""


def spec(name: str = "probe", electrodes: str = "[0, 1, 2, 3]") -> str:
    return SPEC.format(name=name, electrodes=electrodes)


def test_refused_during_a_latched_alarm_and_admitted_after(make_rig, constants) -> None:  # type: ignore[no-untyped-def]
    store = Store()
    rig = make_rig((parse_fault("occlusion@2d+1h"),), store=store)
    mea = SimMea(lambda: rig.plant.state.spike_rate_hz, constants["mea_noise_uv"], 1)
    advance(rig, 2 * 86400 + 120)
    exp_id = ex.submit(store, constants, spec(), rig.clock.now())
    assert experiments_tick(rig.controller, mea) == 0
    refused = ex.get(store, exp_id)
    assert refused["state"] == "queued" and "alarm latched: occlusion:feed" in refused["reason"]
    advance(rig, 2 * 86400 + 2 * 3600)  # the fault cleared; still latched until the ack
    assert experiments_tick(rig.controller, mea) == 0
    rig.controller.ack("all")
    advance(rig, rig.clock.now() + 3 * 3600)  # health recovers
    while rig.controller.scheduler.current is not None:  # not during an exchange
        advance(rig, rig.clock.now() + 600)
    assert experiments_tick(rig.controller, mea) == 1
    done = ex.get(store, exp_id)
    assert done["state"] == "completed", done["reason"]
    counts = [sum(w["spike_counts"].values()) for w in done["result"]["windows"]]
    assert all(c > 0 for c in counts)
    prov = done["result"]["provenance"]
    assert prov["interlock_rules"] and prov["constants"] and prov["configuration_hash"]
    assert prov["calibrations"] and prov["organoid"] == "org-1@v1"
    assert ex.holders(store) == []


def test_health_and_maintenance_window_gate_admission(constants) -> None:  # type: ignore[no-untyped-def]
    assert "UNKNOWN" in ex.admission(constants, [], None, False)
    assert "under" in ex.admission(constants, [], 20.0, False)
    assert "maintenance" in ex.admission(constants, [], 90.0, True)
    assert ex.admission(constants, [], 90.0, False) == ""


def test_two_experiments_cannot_hold_the_same_electrodes(constants) -> None:  # type: ignore[no-untyped-def]
    store = Store()
    a = ex.submit(store, constants, spec("a", "[0, 1, 2]"), 0.0)
    b = ex.submit(store, constants, spec("b", "[2, 3]"), 0.0)
    c = ex.submit(store, constants, spec("c", "[3, 4]"), 0.0)
    assert ex.lease(store, "mea-1@v1", [0, 1, 2], a) == ""
    assert ex.lease(store, "mea-1@v1", [2, 3], b) == f"electrodes held by {a}"
    assert [h[1] for h in ex.holders(store)] == [0, 1, 2]  # all or nothing: 3 was not taken
    assert ex.lease(store, "mea-1@v1", [3, 4], c) == ""
    assert ex.lease(store, "mea-2@v1", [0, 1], b) == ""  # another MEA is another resource
    ex.release(store, a)
    assert ex.lease(store, "mea-1@v1", [2], b) == ""


def test_clean_up_runs_when_an_experiment_fails(constants) -> None:  # type: ignore[no-untyped-def]
    store = Store()
    mea = SimMea(lambda: 2.0, 10.0, 0)
    mea.fail_on_record = True
    exp_id = ex.submit(store, constants, spec(), 0.0)
    ran = ex.try_next(store, constants, mea, 0.0, [], 95.0, False, ["cal-x"])
    assert ran == exp_id
    failed = ex.get(store, exp_id)
    assert failed["state"] == "failed" and "did not answer" in failed["reason"]
    assert mea.stimulating is False  # stimulation off
    assert ex.holders(store) == []  # lease released
    kinds = [e.kind for e in store.events()]
    assert kinds.index("stimulation_on") < kinds.index("experiment_failed")
    assert kinds[-1] == "stimulation_off"


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("amplitude_ua: 4", "amplitude_ua: 50", "amplitude_ua 50 above"),
        ("amplitude_ua: 4, phase_us: 200", "amplitude_ua: 8, phase_us: 300", "charge per phase"),
        ("frequency_hz: 10", "frequency_hz: 500", "frequency_hz 500"),
        ("pulses: 50", "pulses: 5000", "longer than max_duration_s"),
        ("amplitude_ua: 4", "amplitude_ua: 4, charge_balanced: false", "charge-balanced"),
        ("[0, 1, 2, 3]", "[0, 40]", "outside 0..31"),
        # before: every bad electrode listed (200,000 of them: a 1.3 MB message)
        (
            "[0, 1, 2, 3]",
            str(list(range(32, 1000))),
            "[32, 33, 34, 35, 36, 37, 38, 39 and 960 more]",
        ),
        ("[0, 1, 2, 3]", "[1, 1]", "distinct"),
        ("[[0, 10], [10, 20]]", "[[0, 100]]", "recording window"),
    ],
)
def test_unsafe_or_malformed_experiments_are_refused(constants, field, value, words) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError) as err:
        ex.parse_spec(constants, spec().replace(field, value))
    assert words in str(err.value)


def test_cancel_and_unknown_ids(constants) -> None:  # type: ignore[no-untyped-def]
    store = Store()
    exp_id = ex.submit(store, constants, spec(), 0.0)
    assert ex.cancel(store, exp_id, 1.0)["state"] == "cancelled"
    with pytest.raises(InputError, match="already cancelled"):
        ex.cancel(store, exp_id, 2.0)
    with pytest.raises(InputError, match="No experiment"):
        ex.get(store, "exp-99")


def test_spike_detection_counts_inserted_spikes() -> None:
    rng = np.random.default_rng(4)
    trace = rng.normal(0, 10.0, int(10 * SAMPLE_RATE_HZ))
    where = np.arange(100, trace.size - 10, trace.size // 25)[:25]
    trace[where] -= 100.0
    assert detect_spikes(trace, 6.0) == 25
    assert detect_spikes(rng.normal(0, 10.0, trace.size), 6.0) == 0


def test_an_alias_bomb_or_deep_nesting_in_an_experiment_file_is_refused(constants) -> None:  # type: ignore[no-untyped-def]
    bomb = 'a: &a ["x", "x"]\nb: &b [*a, *a]\nc: [*b, *b]\n'
    with pytest.raises(InputError, match="not valid YAML"):
        ex.parse_spec(constants, bomb)
    with pytest.raises(InputError, match=r"nested too deeply|not valid YAML"):
        ex.parse_spec(constants, "x: " + "[" * 5000 + "]" * 5000)


def test_units_carry_versioned_identities_into_the_provenance(constants) -> None:  # type: ignore[no-untyped-def]
    text = spec() + "housing: h-1@v2\nmodules: {pump: pump-2@v3}\n"
    parsed = ex.parse_spec(constants, text)
    prov = ex.provenance(constants, [], parsed.model_dump())
    assert prov["housing"] == "h-1@v2" and prov["modules"] == {"pump": "pump-2@v3"}
    for bad in ("organoid: org-1\n", "housing: h-1\n", "modules: {pump: pump-2}\n"):
        lines = [line for line in spec().splitlines() if not line.startswith(bad.split(":")[0])]
        with pytest.raises(InputError):
            ex.parse_spec(constants, "\n".join(lines) + "\n" + bad)


@pytest.mark.parametrize("window", ["[0, 1e-300]", "[5, 5.0001]"])
def test_a_window_too_short_to_record_is_refused(constants, window: str) -> None:  # type: ignore[no-untyped-def]
    # before: queued, then run on no samples: numpy 'Mean of empty slice' warnings on stderr
    # and a spike count of 0 reported as a result
    text = spec().replace("[[0, 10], [10, 20]]", f"[{window}]")
    with pytest.raises(InputError, match="shorter than 1 ms"):
        ex.submit(Store(), constants, text, 0.0)
