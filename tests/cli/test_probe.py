"""`rigwise probe`, `rigwise bench [history]`, `rigwise monitor` as a user types them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner

from rigwise.cli import cli, main

FAKE = Path(__file__).parents[1] / "probe" / "fake_degraded.yaml"


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGWISE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("RIGWISE_FAKE_HARDWARE", raising=False)


def _invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)
    return result.exit_code, result.output


def test_probe_json_matches_the_os() -> None:
    code, output = _invoke("probe", "--json")
    assert code == 0
    data = json.loads(output)
    assert data["cpu"]["threads"] == os.cpu_count()
    assert data["memory_bytes"] == pytest.approx(psutil.virtual_memory().total, rel=1e-3)
    assert isinstance(data["warnings"], list)


def test_probe_table_shows_cores_and_ram() -> None:
    code, output = _invoke("probe")
    assert code == 0
    assert f"{psutil.cpu_count(logical=False) or os.cpu_count()} cores" in output
    assert "RAM" in output


def test_fake_degraded_link_prints_the_warning_and_fix() -> None:
    code, output = _invoke("probe", env={"RIGWISE_FAKE_HARDWARE": str(FAKE)})
    assert code == 0
    assert "Gen1 x4 / Gen4 x16" in output
    assert "warning" in output and "x4, below the x16" in output
    assert "fix:" in output and "nvidia-smi -i 0 -pl 450" in output


def test_fake_degraded_link_in_json() -> None:
    _code, output = _invoke("probe", "--json", env={"RIGWISE_FAKE_HARDWARE": str(FAKE)})
    rules = {w["rule"] for w in json.loads(output)["warnings"]}
    assert {"pcie_width_below_max", "power_limit_below_default"} <= rules


def test_bad_fake_file_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGWISE_FAKE_HARDWARE", str(tmp_path / "nope.yaml"))
    assert main(["probe"]) == 2


def test_bench_subset_json_then_history() -> None:
    code, output = _invoke("bench", "--quick", "--only", "matmul,memory", "--json")
    assert code == 0
    data = json.loads(output)
    names = {m["name"] for m in data["measurements"]}
    assert {"matmul_fp32", "memory_triad"} <= names
    for m in data["measurements"]:
        assert set(m) >= {"value", "unit", "peak", "predicted", "fraction_of_peak"}
    code, output = _invoke("bench", "history", "--json")
    assert code == 0
    runs = json.loads(output)
    assert [r["run_id"] for r in runs] == [data["run_id"]]
    assert "memory_triad@cpu" in runs[0]["values"]
    code, output = _invoke("bench", "history")
    assert code == 0 and "memory_triad@cpu" in output


def test_bench_table_on_a_fake_machine_shows_peak_and_prediction() -> None:
    code, output = _invoke(
        "bench", "--quick", "--only", "matmul", env={"RIGWISE_FAKE_HARDWARE": str(FAKE)}
    )
    assert code == 0
    assert "150 TFLOP/s" in output  # the described figure
    assert "calibration rtx-4090" in output


def test_bench_unknown_group_exits_2() -> None:
    assert main(["bench", "--only", "warp-drive"]) == 2


@pytest.mark.parametrize(
    ("args", "says"),
    [
        # before: exit 0 after running every group (13 s here): '' meant "all"
        (["--only", ""], "Invalid value for '--only': '' is empty: give a value (Comma-separated"),
        (["--only", ",,,"], "--only ',,,' names no group"),
        # before: the matmul ran, the typo never reported (llm not chosen)
        (["--only", "matmul", "--model", "llama-3.1-8"], "Did you mean: llama-3.1-8b"),
    ],
)
def test_bench_options_that_pick_nothing_or_no_model_exit_2(
    capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    assert main(["bench", "--no-save", *args]) == 2
    assert says in capsys.readouterr().err


def test_empty_history_says_what_to_run() -> None:
    code, output = _invoke("bench", "history")
    assert code == 0 and "rigwise bench --quick" in output


def test_monitor_json_snapshot() -> None:
    code, output = _invoke("monitor", "--json", env={"RIGWISE_FAKE_HARDWARE": str(FAKE)})
    assert code == 0
    data = json.loads(output)
    assert data["gpus"][1]["power_watts"] == 410.5
    assert data["host"]["memory_total_bytes"] > 0


@pytest.mark.parametrize(
    ("args", "says"),
    [
        # before: exit 70 'internal error at socketserver.py:472: OverflowError: bind()'
        (["monitor", "--port", "99999"], "99999 is not in the range 0<=x<=65535"),
        # before: the live view probed the GPUs in a busy loop (no sleep) until Ctrl-C
        (["monitor", "--interval", "0"], "--interval 0 is out of range"),
        (["monitor", "--interval", "0.01", "--json"], "--interval 0.01 is out of range"),
        (["oi", "run", "--metrics-port", "70000"], "70000 is not in the range 0<=x<=65535"),
        (["grid", "up", "--port", "99999"], "99999 is not in the range 0<=x<=65535"),
        (["grid", "up", "--ray-port", "65536"], "65536 is not in the range 0<=x<=65535"),
    ],
)
def test_a_port_or_refresh_interval_out_of_range_is_bad_input(
    capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    code = main(args)  # nothing is started: the option is refused first
    out, err = capsys.readouterr()
    assert code == 2 and says in out + err and "Traceback" not in out + err
