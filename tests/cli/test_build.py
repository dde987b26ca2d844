"""`rigwise rig check` and `rigwise build` through the real CLI entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rigwise.cli import cli, main

RIGS = Path(__file__).parents[2] / "examples" / "rigs"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_rig_check_good_rig_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "rig",
        "check",
        str(RIGS / "good-2x-3090-nvlink.yaml"),
        "--json",
        "--today",
        "2026-11-21",
    )
    data = json.loads(out)
    assert code == 0 and data["verdict"] == "ok"
    assert {"problems", "lanes", "power_watts_idle", "power_watts_load", "parts"} <= set(data)
    assert all("price_date" in p and "stale" in p for p in data["parts"])


@pytest.mark.parametrize(
    "name", ["overloaded-psu.yaml", "lane-shortfall.yaml", "triple-slot-adjacent.yaml"]
)
def test_rig_check_failing_rigs_exit_1(capsys: pytest.CaptureFixture[str], name: str) -> None:
    code, out, _ = run(capsys, "rig", "check", str(RIGS / name))
    assert code == 1
    assert "fails" in out and "fix:" in out


def test_rig_check_stale_age_is_configurable(capsys: pytest.CaptureFixture[str]) -> None:
    rig = str(RIGS / "good-2x-3090-nvlink.yaml")
    _, out, _ = run(capsys, "rig", "check", rig, "--json", "--today", "2026-11-21")
    assert json.loads(out)["stale_prices"] > 0
    _, out, _ = run(
        capsys, "rig", "check", rig, "--json", "--today", "2024-07-02", "--max-price-age", "3650"
    )
    assert json.loads(out)["stale_prices"] == 0


def test_rig_check_bad_input_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "rig", "check", str(tmp_path / "missing.yaml"))
    assert code == 2 and "not found" in err
    bad = tmp_path / "bad.yaml"
    bad.write_text((RIGS / "good-2x-3090-nvlink.yaml").read_text().replace("romed8-2t", "romed8"))
    code, _, err = run(capsys, "rig", "check", str(bad))
    assert code == 2 and "Did you mean" in err and "romed8-2t" in err
    code, _, err = run(
        capsys, "rig", "check", str(RIGS / "good-2x-3090-nvlink.yaml"), "--today", "yesterday"
    )
    assert code == 2


@pytest.mark.slow
def test_build_json_keys_and_plot(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(
        capsys,
        "build",
        "llama-3.1-8b",
        "--target-tps",
        "30",
        "--budget",
        "2500",
        "--json",
        "--plot-dir",
        str(tmp_path),
        "--today",
        "2026-11-21",
    )
    data = json.loads(out)
    assert code == 0 and data["options"]
    option = data["options"][0]
    for key in (
        "on",
        "nodes",
        "network",
        "parts",
        "purchase_usd",
        "decode_tokens_per_s",
        "power_watts_idle",
        "power_watts_load",
        "electricity_usd_per_year",
        "tco_usd",
        "usd_per_million_tokens",
        "checks",
    ):
        assert key in option
    for part in option["parts"]:
        assert {"kind", "name", "quantity", "unit_price_usd", "price_date"} <= set(part)
    assert isinstance(data["rejected"], dict)
    assert (tmp_path / "pareto.html").stat().st_size > 1000
    assert (tmp_path / "pareto.png").stat().st_size > 1000


def test_build_nothing_feasible_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "build", "llama-3.1-405b", "--target-tps", "100", "--budget", "500", "--json"
    )
    assert code == 1
    assert json.loads(out)["rejected"]


def test_pooled_memory_answer(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "build",
        "llama-3.1-70b",
        "--pool-on",
        "raspberry-pi-cm4-8gb",
        "--nodes",
        "20",
        "--network",
        "1gbe",
        "--against",
        "m3-max-40c-128gb",
        "--quant",
        "Q4_K_M",
        "--json",
    )
    data = json.loads(out)
    assert code == 0
    assert not data["single"]["fits"] and data["pooled"]["fits"]
    assert data["pooled"]["memory_bytes"] == pytest.approx(20 * data["single"]["memory_bytes"])
    assert data["pooled"]["decode_tokens_per_s"] < data["reference"]["decode_tokens_per_s"]


def test_nas_sizing(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "build",
        "-",
        "--nas-dataset",
        "40TB",
        "--nas-read",
        "1GB",
        "--raid",
        "raid10",
        "--json",
    )
    data = json.loads(out)
    assert code == 0 and data["level"] == "raid10"
    assert data["usable_bytes"] >= 40e12 and data["read_bytes_per_s"] >= 1e9
    assert data["usable_bytes"] == pytest.approx(data["raw_bytes"] / 2)


def test_nas_read_takes_a_rate_and_refuses_text(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["build", "-", "--nas-dataset", "40TB", "--raid", "raid10", "--json"]
    code, out, _ = run(capsys, *args, "--nas-read", "5GB/s")
    assert code == 0 and json.loads(out)["read_bytes_per_s"] >= 5e9
    code, out, _ = run(capsys, *args, "--nas-read", "fast")
    assert code == 2 and "'fast'" in json.loads(out)["error"]


def test_unknown_model_is_bad_input_not_infeasible(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "build", "llama-9-700b", "--task", "infer")
    assert code == 2
    assert "llama-9-700b" in err and "Did you mean" in err


def test_infer_and_train_plan_on_a_rig_file(capsys: pytest.CaptureFixture[str]) -> None:
    rig = str(RIGS / "good-2x-3090-nvlink.yaml")
    code, out, _ = run(capsys, "infer", "llama-3.1-70b", "--rig", rig, "--no-levers", "--json")
    assert code == 0
    plan = json.loads(out)
    assert plan["hardware"].startswith("2x rtx-3090+nvlink")
    assert len(plan["memory"]["per_device"]) == 2
    code, out, _ = run(capsys, "train", "llama-3.1-8b", "--rig", rig, "--method", "qlora",
                       "--tokens", "1e8", "--json")  # fmt: skip
    assert code == 0 and json.loads(out)["gpus"] == 2


def test_rig_and_on_together_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    rig = str(RIGS / "good-2x-3090-nvlink.yaml")
    code, _, err = run(capsys, "infer", "llama-3.1-8b", "--rig", rig, "--on", "rtx-4090")
    assert code == 2 and "--rig" in err


def test_finetune_builds_are_timed_never_zero_and_nvidia_first() -> None:
    import json as _json

    from click.testing import CliRunner

    from rigwise.cli import cli

    args = ["build", "llama-3.1-8b", "--task", "finetune", "--method", "qlora", "--budget",
            "2500", "--used", "--today", "2026-11-23", "--json"]  # fmt: skip
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    design = _json.loads(result.output)
    assert design["tokens"] == 1e8 and design["deadline_s"] == 7 * 86400  # the stated defaults
    options = design["options"]
    assert options and all(o["time_to_train_s"] and o["time_to_train_s"] > 0 for o in options)
    assert all(o["quant"] == "NF4" for o in options)
    first = options[0]
    assert first["kind"] != "apple" and first["time_to_train_s"] <= 7 * 86400
    text = CliRunner().invoke(cli, args[:-1]).output
    import re

    assert not re.search(r"(?<![\d.])0\.0 d", text)
    assert "target 100 M tokens within 7 d, qlora" in text


def test_the_clean_cheaper_faster_3090_box_ranks_above_the_titan_box() -> None:
    from click.testing import CliRunner

    from rigwise.cli import cli

    args = ["build", "llama-3.1-70b", "--task", "infer", "--target-tps", "15", "--budget",
            "3000", "--used", "--today", "2026-11-23"]  # fmt: skip
    text = CliRunner().invoke(cli, args).output
    lines = [line for line in text.splitlines() if line[:3].strip().rstrip(".").isdigit()]
    ons = [line.split()[2] for line in lines]
    assert "2x" in lines[0] and "rtx-3090" in lines[0]
    titan = next((i for i, line in enumerate(lines) if "titan-rtx" in line), len(lines))
    assert titan > 0 and len(ons) >= 2


@pytest.mark.parametrize(
    ("args", "says"),
    [
        # before: each answered its own question and dropped the stray option without a word
        (["--drive", "zzz"], "--drive does not apply to ranked builds."),
        (["--network", "10gbe", "--raid", "raid10"], "--network, --raid do not apply to ranked"),
        (["--pool-on", "rtx-4090", "--budget", "1000"], "--budget does not apply to --pool-on"),
        (["--nas-dataset", "40TB", "--nas-read", "2GB/s", "--top", "3"], "--top does not apply"),
    ],
)
def test_an_option_of_another_question_is_bad_input(
    capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    code, out, _ = run(capsys, "build", "llama-3.1-8b", *args, "--json")
    assert code == 2
    assert json.loads(out)["error"].startswith(says)


@pytest.mark.parametrize(
    "command",
    [["build", "llama-3.1-8b"], ["validate", "training"], ["validate", "inference"]],
)
@pytest.mark.parametrize("folder", ["/proc", "file"])
def test_a_plot_dir_that_cannot_be_written_is_refused_first(
    tmp_path: Path, command: list[str], folder: str
) -> None:
    # before: exit 70 'internal error at pathlib.py:1044: FileNotFoundError' after the work
    if folder == "file":
        folder = str(tmp_path / "a-file")
        Path(folder).write_text("x")
    result = CliRunner().invoke(cli, [*command, "--plot-dir", folder])
    assert result.exit_code == 2 and "cannot write into" in result.stderr
    assert "give a writable folder" in result.stderr and "Traceback" not in result.output


def test_an_option_of_another_task_exits_2_and_defaults_do_not_trip_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # before: --method full on an infer build (exit 0) ranked builds with no engine or format
    code, _, err = run(capsys, "build", "llama-3.1-8b", "--method", "full")
    assert code == 2
    assert "--method applies to --task finetune, not --task infer" in err
    # --concurrency's default is not an option given: a train build still runs
    code, out, _ = run(capsys, "build", "llama-3.1-8b", "--task", "train", "--top", "1", "--json")
    assert code in (0, 1) and json.loads(out)["task"] == "train"
