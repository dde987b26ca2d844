"""`rigwise train` and `rigwise validate training` through click."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from rigwise.cli import cli
from rigwise.cli._common import run_guarded


def run(args: list[str]) -> tuple[int, str]:
    runner = CliRunner()
    captured: dict[str, object] = {}

    def call() -> object:
        result = runner.invoke(cli, args, standalone_mode=False, catch_exceptions=False)
        captured["out"] = result.output
        if result.exception is not None:
            raise result.exception
        return result.return_value

    code = run_guarded(call)
    return code, str(captured.get("out", ""))


def test_json_plan_and_exit_code_zero() -> None:
    code, out = run(
        [
            "train",
            "llama-3.1-8b",
            "--on",
            "8x h100-sxm",
            "--zero",
            "3",
            "--global-batch",
            "8",
            "--json",
        ]
    )
    assert code == 0
    data = json.loads(out)
    assert data["fits"] is True and data["layout"]["zero"] == 3


def test_does_not_fit_exits_one_with_the_reason() -> None:
    code, out = run(["train", "llama-3.1-8b", "--on", "rtx-4090", "--method", "full"])
    assert code == 1 and "does not fit" in out


def test_search_prints_the_runners_up() -> None:
    code, out = run(
        [
            "train",
            "llama-3.1-8b",
            "--on",
            "8x h100-sxm",
            "--search",
            "--top",
            "3",
            "--global-batch",
            "16",
        ]
    )
    assert code == 0 and "search:" in out and "#3:" in out


def test_queries_file_gives_one_line_per_query(tmp_path: Path) -> None:
    queries = tmp_path / "q.jsonl"
    queries.write_text(
        '{"model": "llama-3.1-8b", "on": "8x h100-sxm", "zero": 3, "global_batch": 8}\n'
        '{"model": "no-such-model", "on": "rtx-4090"}\n'
    )
    code, out = run(["train", "--queries", str(queries)])
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert len(lines) == 2 and lines[0]["fits"] is True and "error" in lines[1]
    assert code == 2


def test_validate_training_prints_every_source() -> None:
    code, out = run(["validate", "training"])
    assert code == 0
    for source in (
        "Megatron-LM 2021 Table 1",
        "Korthikanti 2022 Table 5",
        "torchtitan",
        "llm-foundry A100",
        "holdout",
    ):
        assert source in out


def test_a_plan_that_does_not_fit_prints_no_time_or_cost() -> None:
    args = ["train", "llama-3.1-8b", "--on", "rtx-4090", "--method", "full", "--tokens", "1B"]
    code, out = run(args)
    assert code == 1 and "does not fit" in out
    assert "to train" not in out and "$" not in out and "step:" not in out
    code, out = run([*args, "--json"])
    data = json.loads(out)
    assert data["time_to_train_s"] is None and data["cost_usd"] is None and data["step"] is None


def test_default_layout_that_does_not_fit_is_searched_and_says_so() -> None:
    code, out = run(
        ["train", "llama-3.1-8b", "--on", "8x h100-sxm", "--global-batch", "8", "--json"]
    )
    data = json.loads(out)
    assert code == 0 and data["fits"] is True and data["search"]["feasible"] > 0
    assert any("does not fit" in note and "searched" in note for note in data["notes"])


def test_objective_cost_keeps_the_gpus_unless_allowed_fewer() -> None:
    args = ["train", "llama-3.1-8b", "--on", "dgx-h100", "--nodes", "4", "--network", "ib-ndr"]
    args += ["--global-batch", "64", "--search", "--objective", "cost", "--json"]
    code, out = run(args)
    assert code == 0 and json.loads(out)["gpus"] == 32
    code, out = run([*args, "--allow-fewer-gpus"])
    assert code == 0 and json.loads(out)["gpus"] < 32


def test_seq_max_is_the_longest_that_fits() -> None:
    args = ["train", "llama-3.1-8b", "--on", "rtx-4090", "--method", "qlora"]
    args += ["--recompute", "full", "--json"]
    code, out = run([*args, "--seq", "max"])
    data = json.loads(out)
    assert code == 0 and data["fits"] and any("longest sequence" in n for n in data["notes"])
    seq = data["memory_per_gpu"] and int(data["notes"][-1].split(": ")[1].split()[0])
    code, out = run([*args, "--seq", str(seq + 256), "--micro-batch", "1"])
    assert code == 1


def test_framework_flag_and_queries_take_the_same_keys(tmp_path: Path) -> None:
    query = {"model": "llama-3.1-8b", "on": "rtx-4090", "method": "full"}
    query |= {"framework": "torchtune", "dropout": False, "overlap_grad_reduce": True}
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps(query) + "\n", encoding="utf-8")
    code, out = run(["train", "--queries", str(path)])
    from_queries = json.loads(out.splitlines()[0])
    args = ["train", "llama-3.1-8b", "--on", "rtx-4090", "--method", "full"]
    code2, out2 = run([*args, "--framework", "torchtune", "--no-dropout", "--json"])
    assert code == code2 == 0
    assert from_queries["memory_per_gpu"] == json.loads(out2)["memory_per_gpu"]
