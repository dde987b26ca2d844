"""`rigwise oi ...` through the real entry point: --json everywhere, exit 2 with the fix on bad
input, exit 1 for a refused acknowledgement, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rigwise.cli import main

SUBCOMMANDS = [
    ["simulate"], ["init"], ["run"], ["status"], ["alarms"], ["ack"], ["calibrate", "pump"],
    ["experiments", "submit"], ["experiments", "list"], ["experiments", "cancel"],
    ["experiments", "results"],
]  # fmt: skip


def call(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("sub", SUBCOMMANDS, ids=" ".join)
def test_every_subcommand_has_help_and_json(capsys, sub: list[str]) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = call(capsys, "oi", *sub, "--help")
    assert code == 0
    assert "--json" in out and "Show this message" in out


def test_simulate_json_has_the_named_keys(capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = call(capsys, "oi", "simulate", "--days", "1", "--seed", "1", "--json")
    assert code == 0
    report = json.loads(out)
    for key in (
        "health_index",
        "alarms",
        "max_housing_volume_ml",
        "housing_capacity_ml",
        "dosed_ml",
        "removed_ml",
        "ledger_error_ml",
    ):
        assert key in report


@pytest.mark.parametrize(
    ("args", "fix"),
    [
        (["simulate", "--fault", "clog@1d"], "Did you mean"),
        (["simulate", "--days", "0"], "0 < days"),
        (["simulate", "--ack", "soon"], "3d"),
        (["calibrate", "pump", "feed", "--run", "sixty:1"], "SECONDS:GRAMS"),
        (["calibrate", "pump", "feed", "--run", "60:1", "--run", "120:0.5"], "longer runs"),
        # before: exit 0, a flow of inf mL/min stored as the pump's calibration
        (["calibrate", "pump", "feed", "--run", "60:1e309"], "'1e309' is not a finite number"),
        # before: 'The runs give a non-positive flow (0 mL/s)'
        (["calibrate", "pump", "feed", "--run", "1e309:1"], "'1e309' is not a finite number"),
        (["calibrate", "pump", "feed", "--run", "60:nan"], "'nan' is not a plain number"),
        # before: exit 0, an empty or a 100k-character provenance stored with the fit
        (["calibrate", "pump", "feed", "--run", "60:1", "--source", ""], "'' is empty: give"),
        (["calibrate", "pump", "feed", "--run", "60:1", "--source", "x" * 100_000], "at most 300"),
        # before: exit 0 and a clean report: the fault / ack came after the run's end
        (["simulate", "--days", "1", "--fault", "occlusion@400d"], "would never happen"),
        (["simulate", "--days", "1", "--ack", "2d"], "after the simulation's end"),
        # before: exit 0 after no step at all; and 'must be 1s..1h and 0..366d' naming neither
        (["run", "--duration", "5s", "--period", "10s"], "--duration 5s is out of range"),
        (["run", "--duration", "400d"], "--duration 400d is out of range"),
        (["run", "--period", "0.5s"], "--period 0.5s is out of range"),
        # before: 'Use 1s to 1h', and a period over 97 s was then refused by the heater loop
        (["run", "--period", "2h"], "--period 2h is out of range. Use 1s to 1.62 min (97 s)."),
        (["simulate", "--period", "0.5s"], "is out of range. Use 1s to 1.62 min (97 s)."),
        # before: "Experiment file '/dev/zero' not found." for a file that exists
        (["experiments", "submit", "/dev/zero"], "'/dev/zero' is not a regular file"),
        (["simulate", "--constants", "/dev/zero"], "'/dev/zero' is not a regular file"),
        (["run", "--hardware", "/dev/zero", "--duration", "1m"], "is not a regular file"),
        # before: exit 0 and a clean report: no reading of a 'temprature' sensor was faulted
        (["simulate", "--fault", "sensor_oob:temprature@1d"], "Did you mean: temperature"),
        (["simulate", "--fault", "occlusion:drian@1d"], "Leave out ':drian'"),
        (["run", "--duration", "1h", "--fault", "comms_loss:pupm@0s"], "no device 'pupm'"),
    ],
)
def test_bad_input_exits_2_with_the_fix(capsys, tmp_path: Path, args, fix) -> None:  # type: ignore[no-untyped-def]
    code, _, err = call(capsys, "oi", *args, "--db", str(tmp_path / "x.sqlite3"))
    assert code == 2
    assert fix in err and "Traceback" not in err


def test_an_unknown_experiment_id_is_shown_bounded(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # before: a 100,000-character id was echoed whole in the error
    db = str(tmp_path / "x.sqlite3")
    assert call(capsys, "oi", "init", "--db", db)[0] == 0
    code, out, _ = call(capsys, "oi", "experiments", "cancel", "x" * 100_000, "--db", db, "--json")
    assert code == 2 and "No experiment 'xxx" in out and len(out) < 1_000


def test_status_on_a_missing_store_exits_2(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    code, _, err = call(capsys, "oi", "status", "--db", str(tmp_path / "none.sqlite3"))
    assert code == 2 and "oi init" in err


@pytest.mark.parametrize("sub", [["status"], ["init"], ["experiments", "list"]], ids=" ".join)
def test_another_programs_sqlite_file_is_refused_and_left_alone(
    capsys, tmp_path: Path, sub
) -> None:  # type: ignore[no-untyped-def]
    # before: exit 0; the file was switched to WAL and given the store's tables
    import sqlite3

    path = tmp_path / "app.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE users (name TEXT)")
    db.close()
    before = path.read_bytes()
    code, _, err = call(capsys, "oi", *sub, "--db", str(path))
    assert code == 2 and "not an O.I. store" in err and "users" in err
    assert path.read_bytes() == before


def test_run_then_status_alarms_and_ack(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    db = str(tmp_path / "oi.sqlite3")
    assert call(capsys, "oi", "init", "--db", db, "--json")[0] == 0
    code, out, _ = call(
        capsys,
        "oi",
        "run",
        "--db",
        db,
        "--duration",
        "2h",
        "--period",
        "60s",
        "--fault",
        "occlusion@1h+2h",
        "--json",
    )
    assert code == 0 and "occlusion:feed" in json.loads(out)["latched_alarms"]
    code, out, _ = call(capsys, "oi", "ack", "occlusion", "--db", db, "--json")
    assert code == 1 and json.loads(out)["refused"]  # the line is still blocked
    # before: exit 0 with nothing released or refused: the misspelt device matched no alarm
    code, out, _ = call(capsys, "oi", "ack", "occlusion:fed", "--db", db, "--json")
    assert code == 2 and "No alarm 'occlusion:fed'" in out and "occlusion:feed" in out
    code, out, _ = call(capsys, "oi", "ack", "x" * 100_000, "--db", db, "--json")
    assert code == 2 and len(out) < 1_000  # before: the whole argument echoed
    call(
        capsys,
        "oi",
        "run",
        "--db",
        db,
        "--duration",
        "2h",
        "--period",
        "60s",
        "--fault",
        "occlusion@1h+2h",
    )
    code, out, _ = call(capsys, "oi", "status", "--db", db, "--json")
    assert json.loads(out)["health_index"] == "ALARM"  # cleared, not yet acknowledged
    code, out, _ = call(capsys, "oi", "ack", "all", "--db", db, "--json")
    assert code == 0 and [a["kind"] for a in json.loads(out)["released"]] == ["occlusion"]
    code, out, _ = call(capsys, "oi", "alarms", "--db", db, "--all", "--json")
    rows = json.loads(out)
    assert rows[0]["acked_at_s"] is not None and not rows[0]["latched"]


def test_calibrate_pump_fits_and_stores_provenance(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    db = str(tmp_path / "oi.sqlite3")
    code, out, _ = call(
        capsys,
        "oi",
        "calibrate",
        "pump",
        "feed",
        "--run",
        "60:1.007",
        "--run",
        "120:2.014",
        "--db",
        db,
        "--json",
    )
    cal = json.loads(out)
    assert code == 0 and cal["flow_ml_per_s"] == pytest.approx(1 / 60, rel=1e-6)
    assert cal["id"].startswith("cal-") and cal["offset_ml"] == pytest.approx(0, abs=1e-9)


@pytest.mark.parametrize(
    ("run", "said"),
    [
        ("0.0000001:1000", "outside what a small peristaltic pump moves (0.01-400 mL/min"),
        ("60:0.0000001", "outside what a small peristaltic pump moves"),
        ("60:1_0", "Bad --run '60:1_0': '1_0' is not a plain number"),
        ("60:inf", "Bad --run '60:inf': 'inf' is not a plain number"),
    ],
)
def test_calibrate_pump_refuses_a_flow_no_pump_moves_and_odd_numbers(  # type: ignore[no-untyped-def]
    capsys, tmp_path: Path, run: str, said: str
) -> None:
    # before: 0.0000001 s for 1000 g stored ~6e11 mL/min; '1_0' read as 10 g
    db = str(tmp_path / "oi.sqlite3")
    code, _, err = call(capsys, "oi", "calibrate", "pump", "feed", "--run", run, "--db", db)
    assert code == 2 and said in err
    code, out, _ = call(capsys, "oi", "calibrate", "pump", "feed", "--run", "60:1.007", "--db", db)
    assert code == 0 and "feed 1.0000 mL/min" in out  # a plain one still stores


def test_no_traceback_from_a_subprocess(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "rigwise", "oi", "simulate", "--period", "1ms"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


EXPERIMENT = """
name: probe
organoid: org-1@v1
mea: mea-1@v1
electrodes: [0, 1]
stimulation: {amplitude_ua: 4, phase_us: 200, frequency_hz: 10, pulses: 50}
recording_windows_s: [[0, 5]]
max_duration_s: 60
"""


def test_experiment_submitted_runs_with_the_controller(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    db, spec = str(tmp_path / "oi.sqlite3"), tmp_path / "probe.yaml"
    spec.write_text(EXPERIMENT)
    code, out, _ = call(capsys, "oi", "experiments", "submit", str(spec), "--db", db, "--json")
    exp_id = json.loads(out)["id"]
    assert code == 0 and json.loads(out)["state"] == "queued"
    code, out, _ = call(capsys, "oi", "experiments", "results", exp_id, "--db", db, "--json")
    assert code == 1 and json.loads(out)["state"] == "queued"  # not run yet
    call(capsys, "oi", "run", "--db", db, "--duration", "1h", "--period", "60s")
    code, out, _ = call(capsys, "oi", "experiments", "results", exp_id, "--db", db, "--json")
    result = json.loads(out)
    assert code == 0 and result["state"] == "completed"
    assert set(result["result"]["windows"][0]["spike_counts"]) == {"0", "1"}
    code, out, _ = call(capsys, "oi", "experiments", "list", "--db", db, "--json")
    assert [e["state"] for e in json.loads(out)] == ["completed"]
    code, _, err = call(capsys, "oi", "experiments", "cancel", exp_id, "--db", db)
    assert code == 2 and "already completed" in err


def test_hardware_run_with_a_bad_drivers_file_exits_2(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "rig.yaml"
    bad.write_text("pumps: {feed: {type: pwm}}\n")
    code, _, err = call(
        capsys, "oi", "run", "--db", str(tmp_path / "o.sqlite3"), "--hardware", str(bad)
    )
    assert code == 2 and "Bad drivers file" in err and "docs/oi.md" in err
    code, _, err = call(
        capsys,
        "oi",
        "run",
        "--db",
        str(tmp_path / "o.sqlite3"),
        "--hardware",
        str(bad),
        "--fault",
        "occlusion@1h",
    )
    assert code == 2 and "simulator" in err
