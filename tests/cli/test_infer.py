"""`rigwise infer` and `rigwise validate inference` through click's test runner."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from rigwise.cli import cli
from rigwise.cli._common import run_guarded


def _run(*args: str) -> tuple[int, str]:
    runner = CliRunner()
    result = runner.invoke(cli, list(args))
    return result.exit_code, result.output


def test_a_plan_that_fits_exits_0_and_prints_the_documented_json() -> None:
    code, out = _run("infer", "llama-3-8b", "--on", "rtx-4090", "--json", "--no-levers")
    assert code == 0
    plan = json.loads(out)
    assert plan["fits"] is True and plan["decode"]["tokens_per_s"] > 50


def test_a_plan_that_does_not_fit_exits_1_and_says_why() -> None:
    code, out = _run("infer", "llama-3-70b", "--on", "rtx-3090", "--quant", "Q4_K_M")
    assert code == 1
    assert "does not fit" in out and "lever" in out


def test_an_unknown_gpu_exits_2_with_suggestions(capsys: object) -> None:
    code = run_guarded(lambda: cli.main(args=["infer", "llama-3-8b", "--on", "rtx 4900"],
                                        prog_name="rigwise", standalone_mode=False))  # fmt: skip
    assert code == 2


def test_table_output_shows_speeds_and_serving() -> None:
    code, out = _run(
        "infer", "llama-3.1-8b", "--on", "h100-sxm", "--concurrency", "32", "--no-levers"
    )
    assert code == 0
    assert "decode" in out and "serving 32 requests" in out


def test_queries_answer_line_by_line_and_survive_a_bad_line(tmp_path: Path) -> None:
    queries = tmp_path / "q.jsonl"
    queries.write_text(
        "\n".join(
            [
                json.dumps({"model": "llama-3-8b", "on": "rtx-4090", "levers": False}),
                json.dumps({"model": "llama-3-8b", "on": "rtx 4900"}),
                "not json",
                json.dumps(
                    {
                        "model": "llama-3-70b",
                        "on": "2x rtx-3090",
                        "quant": "Q4_K_M",
                        "levers": False,
                    }
                ),
            ]
        ),
        encoding="utf-8",
    )
    code, out = _run("infer", "--queries", str(queries))
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 2 and len(lines) == 4  # exit: the worst line (2: some lines were bad input)
    assert lines[0]["fits"] is True
    assert "4900" in lines[1]["error"] and "line 3" in lines[2]["error"]
    assert lines[3]["decode"]["tokens_per_s"] < lines[0]["decode"]["tokens_per_s"]


def test_calibrated_without_a_store_is_a_clear_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RIGWISE_DATA_DIR", str(tmp_path))
    code, out = _run("infer", "llama-3-8b", "--on", "rtx-4090", "--calibrated")
    assert code == 2
    assert "rigwise bench" in out


def test_calibrated_uses_the_stored_factors(monkeypatch: pytest.MonkeyPatch) -> None:
    from rigwise.bench import calibration

    stored = {"decode_bandwidth_efficiency": 0.3, "matmul_efficiency_bf16": 0.6}
    monkeypatch.setattr(calibration, "load_calibration", lambda accelerator_id: stored)
    args = ("infer", "llama-3-8b", "--on", "rtx-4090", "--json", "--no-levers")
    _, plain = _run(*args)
    code, calibrated = _run(*args, "--calibrated")
    assert code == 0
    slow, fast = json.loads(calibrated)["decode"], json.loads(plain)["decode"]
    assert slow["tokens_per_s"] < 0.6 * fast["tokens_per_s"]


def test_validate_inference_on_one_file(tmp_path: Path) -> None:
    from rigwise.validation.inference_readers import default_directory

    name = "llamacpp_discussion15013_cuda_scoreboard_llama2_7b_q4_0.csv"
    (tmp_path / name).write_bytes((default_directory() / name).read_bytes())
    code, out = _run("validate", "inference", str(tmp_path), "--json")
    assert code == 0
    result = json.loads(out)
    assert result["coverage"]["rows_total"] == 16
    assert {s["metric"] for s in result["stats"]} == {"decode", "prefill"}


def test_search_prints_the_frontier_and_the_best_of_each_mode() -> None:
    code, out = _run("infer", "llama-3.3-70b", "--on", "dgx-h100", "--search", "--slo-tpot", "40ms")
    assert code == 0
    assert "Pareto frontier" in out and "best aggregated" in out and "best disaggregated" in out
    # each best layout's speeds and latencies carry their P10-P90 range: "4,303.1 tok/s/GPU
    # (1,488.0-6,320.0), ..., TTFT 5.05 s (3.84 s-5.48 s), TPOT ..."
    best = " ".join(out.split()).partition("best aggregated")[2]  # lines wrap on narrow terminals
    assert re.search(r"tok/s/GPU \([\d,.]+-[\d,.]+", best), best


def test_search_with_slos_no_layout_meets_is_a_result_not_an_error() -> None:
    # every layout over a 1 ms TTFT: exit 1 (infeasible), each rejection counted, no table
    code, out = _run("infer", "llama-3.1-8b", "--on", "l4", "--search", "--slo-ttft", "1ms")
    assert code == 1, out
    assert "0 meet the SLOs" in out and "TTFT over the SLO" in out
    assert "best aggregated: none meets the SLOs" in out and "Pareto" not in out
    code, out = _run(
        "infer", "llama-3.1-8b", "--on", "l4", "--search", "--slo-ttft", "1ms", "--json"
    )
    assert code == 1, out
    found = json.loads(out)
    assert found["frontier"] == [] and found["feasible"] == 0 and found["best_aggregated"] is None


def test_search_without_slos_does_not_speak_of_slos() -> None:
    # before: "21 meet the SLOs" and "best disaggregated: none meets the SLOs" with no SLO
    # given, on one device where no disaggregated layout exists
    code, out = _run("infer", "llama-3.1-8b", "--on", "h100-sxm", "--search")
    assert code == 0, out
    assert "SLO" not in out
    assert "best disaggregated: none fits" in out
    assert "note: Disaggregated layouts need 2 or more devices" in out


def test_search_json_and_flags_that_need_it() -> None:
    code, out = _run("infer", "llama-3.1-8b", "--on", "2x h100-sxm", "--search", "--json")
    assert code == 0
    found = json.loads(out)
    assert {"frontier", "best_aggregated", "rejected", "seconds", "layouts_per_s"} <= set(found)
    code, out = _run("infer", "llama-3.1-8b", "--on", "h100-sxm", "--slo-tpot", "40ms")
    assert code == 2
    code, out = _run("infer", "llama-3.1-8b", "--on", "h100-sxm", "--search", "--tp", "2")
    assert code == 2


def test_queueing_and_layout_options_reach_the_plan() -> None:
    code, out = _run(
        "infer", "llama-3.3-70b", "--on", "2x h100-sxm", "--quant", "FP8", "--prompt", "5000",
        "--gen", "500", "--concurrency", "250", "--no-levers", "--json",
    )  # fmt: skip
    assert code == 0
    serving = json.loads(out)["serving"]
    assert serving["queued"] == 250 - serving["running_batch"] > 0
    code, out = _run(
        "infer", "deepseek-v3", "--on", "dgx-h200", "--nodes", "2", "--network", "ib-ndr",
        "--quant", "FP8", "--no-levers", "--json", "--concurrency", "64",
        "--disagg", '{"prefill": {"tp": 8}, "decode": {"tp": 8, "ep": 8, "attention_dp": 8}}',
    )  # fmt: skip
    assert code == 0 and json.loads(out)["serving"]["mode"] == "disaggregated"


def test_no_api_server_plans_the_engine_alone() -> None:
    # one API-server process streams at most 1e6 / 77.8 us = 12.85k tokens/s
    # (engine_overheads.csv vllm frontend_token_us); in-process the engine sets the rate
    args = ("infer", "qwen3-0.6b", "--on", "h100-sxm", "--engine", "vllm", "--prompt", "512",
            "--gen", "128", "--concurrency", "500", "--json", "--no-levers")  # fmt: skip
    served = json.loads(_run(*args)[1])["serving"]
    code, out = _run(*args, "--no-api-server")
    alone = json.loads(out)["serving"]
    assert code == 0
    assert served["aggregate_tokens_per_s"] == pytest.approx(1e6 / 77.8, rel=1e-3)
    assert alone["aggregate_tokens_per_s"] > 1.2e6 / 77.8
    code, out = _run("infer", "qwen3-0.6b", "--on", "h100-sxm", "--no-api-server", "--search")
    assert code == 2 and "not with --search" in out


@pytest.mark.parametrize(
    ("disagg", "says"),
    [
        # before: exit 70 'internal error at decoder.py:353: RecursionError'
        ("[" * 50_000 + "]" * 50_000, "--disagg nests deeper than 64 levels"),
        # before: planned with tp 1
        ('{"prefill": {"tp": true}, "decode": {"tp": 1}}', "prefill.tp = true is not a number"),
        ('{"prefill": {"tp": NaN}, "decode": {"tp": 1}}', "NaN is not a number JSON accepts"),
    ],
)
def test_a_malformed_disagg_is_bad_input(disagg: str, says: str) -> None:
    result = CliRunner().invoke(
        cli, ["infer", "llama-3.1-8b", "--on", "8x h100-sxm", "--disagg", disagg]
    )
    assert result.exit_code == 2 and says in result.stderr and "Traceback" not in result.output
