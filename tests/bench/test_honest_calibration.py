"""A calibration cannot go wrong silently (issue 15, item 3): physical bounds, the interval
guard of short runs, which stored run a plan uses, and importing llama-bench / Ollama output."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from rigwise.api.infer import plan_inference
from rigwise.bench import calibration as store
from rigwise.bench.imports import import_file, parse, quant_from_model_type
from rigwise.bench.screen import screen
from rigwise.errors import InputError

FP = "machine-a"


@pytest.mark.parametrize(
    ("value", "ok"), [(0.002, False), (0.05, False), (0.051, True), (1.0, True), (1.2, False)]
)
def test_an_efficiency_outside_the_physical_range_is_refused(value: float, ok: bool) -> None:
    assert (store.bounds_problem("decode_bandwidth_efficiency", value) is None) is ok


def test_out_of_range_factors_are_never_stored_nor_loaded() -> None:
    store.save_run(FP, "2026-11-23T10:00:00+00:00", True, {}, {"cpu-x": {
        "decode_bandwidth_efficiency": 0.002, "memory_bandwidth_efficiency": 0.6}})  # fmt: skip
    assert store.load_calibration("cpu-x", FP) == {"memory_bandwidth_efficiency": 0.6}
    # a database written before the bounds existed: the bad row is ignored, not applied
    with sqlite3.connect(store.db_path()) as connection:
        connection.execute(
            "INSERT INTO factors VALUES (1, ?, 'cpu-x', 'prefill_compute_efficiency', 0.001)",
            (FP,),
        )
    assert "prefill_compute_efficiency" not in store.load_calibration("cpu-x", FP)


def test_the_issue_case_a_vm_matched_to_a_server_stores_nothing_and_says_why() -> None:
    kept, refused, _ = screen({"epyc-9654-ddr5-4800": {"decode_bandwidth_efficiency": 0.002}}, True)
    assert kept == {}
    assert "outside (0.05, 1.0]" in refused[0].reason and "not this machine" in refused[0].reason


def test_a_quick_run_that_moves_a_plan_past_its_range_is_not_stored() -> None:
    factors = {"rtx-4090": {"decode_bandwidth_efficiency": 0.2}}  # 4x slower than validated
    kept, refused, refs = screen(factors, quick=True)
    assert kept == {} and refs[0].outside
    assert "outside the P10-P90 range" in refused[0].reason and "--quick" in refused[0].reason
    kept, refused, refs = screen(factors, quick=False)  # a full run may overrule it
    assert kept == factors and refused == [] and "-> " in refs[0].describe()


def test_a_calibration_inside_the_range_is_kept_with_its_before_and_after() -> None:
    kept, refused, refs = screen({"rtx-4090": {"decode_bandwidth_efficiency": 0.9}}, quick=True)
    assert kept and not refused and not refs[0].outside
    assert refs[0].after_tokens_per_s != refs[0].before_tokens_per_s


def test_calibrated_plans_can_say_which_run_they_use_and_how_old_it_is() -> None:
    store.save_run(FP, "2026-11-20T10:00:00+00:00", False, {}, {"rtx-4090": {
        "decode_bandwidth_efficiency": 0.9}})  # fmt: skip
    source = store.calibration_source("rtx-4090", FP)
    assert source is not None and source.run_id == 1 and source.origin == "bench"
    assert source.age_s > 24 * 3600 and "days old" in source.describe()
    assert store.calibration_source("rtx-3090", FP) is None


def _llama_bench(path: Path, decode: float, prefill: float = 8000.0) -> Path:
    """Two tests in the documented `llama-bench -o json` shape (tools/llama-bench/README.md)."""
    common = {
        "build_commit": "abc1234", "gpu_info": "NVIDIA GeForce RTX 4090", "backends": "CUDA",
        "model_filename": "Meta-Llama-3.1-8B-Q4_K_M.gguf", "model_type": "llama 8B Q4_K - Medium",
        "model_size": 4920734720, "model_n_params": 8030261248, "n_batch": 2048,
        "n_ubatch": 512, "n_gpu_layers": 99, "flash_attn": False,
    }  # fmt: skip
    rows = [
        {**common, "n_prompt": 512, "n_gen": 0, "avg_ts": prefill, "stddev_ts": 10.0},
        {**common, "n_prompt": 0, "n_gen": 128, "avg_ts": decode, "stddev_ts": 0.5},
    ]
    path.write_text(json.dumps(rows), encoding="utf-8")
    return path


def test_importing_llama_bench_json_changes_the_matching_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store, "current_fingerprint", lambda: FP)
    result = import_file(_llama_bench(tmp_path / "lb.json", 140.0), None, "llama-3.1-8b", None)
    assert result.accelerator_id == "rtx-4090" and result.quant == "Q4_K_M", result.refused
    assert not result.refused, result.refused
    assert result.run_id is not None and set(result.factors) == {
        "decode_bandwidth_efficiency", "prefill_compute_efficiency"}  # fmt: skip
    assert result.after["decode"] > result.before["decode"]
    stored = store.load_calibration("rtx-4090", FP)
    calibrated = plan_inference(
        model="llama-3.1-8b", on="rtx-4090", prompt=1, gen=128, context=129, levers=False,
        calibration=stored,
    )  # fmt: skip
    assert calibrated.decode is not None
    assert calibrated.decode.tokens_per_s == pytest.approx(140.0, rel=0.01)
    assert store.calibration_source("rtx-4090", FP).origin == "import: lb.json"  # type: ignore[union-attr]


def test_a_rate_no_physical_factor_explains_is_refused(tmp_path: Path) -> None:
    path = _llama_bench(tmp_path / "lb.json", decode=5000.0)  # beyond the 4090's bandwidth
    result = import_file(path, None, "llama-3.1-8b", None, save=False)
    assert "decode_bandwidth_efficiency" not in result.factors
    assert "outside (0.05, 1.0]" in result.refused["decode"]


def test_llama_bench_csv_and_ollama_verbose_are_read() -> None:
    csv_text = "model_type,gpu_info,n_prompt,n_gen,avg_ts\nllama 8B Q4_0,RTX 3090,0,128,150.2\n"
    kind, rates = parse(csv_text)
    assert (
        kind == "llama-bench csv" and rates[0].phase == "decode" and rates[0].quant_hint == "Q4_0"
    )
    verbose = (
        "total duration:       5.1s\nprompt eval count:    26 token(s)\n"
        "prompt eval duration: 123ms\nprompt eval rate:     211.38 tokens/s\n"
        "eval count:           298 token(s)\neval duration:        4.5s\n"
        "eval rate:            66.22 tokens/s\n"
    )
    kind, rates = parse(verbose)
    assert kind == "ollama --verbose"
    assert [(r.phase, r.tokens_per_s) for r in rates] == [("prefill", 211.38), ("decode", 66.22)]
    assert rates[0].tokens == 26
    with pytest.raises(InputError, match="Not a llama-bench"):
        parse("hello")
    assert quant_from_model_type("llama 70B Q5_K - Small") == "Q5_K_S"


def test_the_cli_imports_a_file_and_calibrated_plans_name_the_run(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from rigwise.cli import cli

    runner = CliRunner()
    path = _llama_bench(tmp_path / "lb.json", 135.0)
    done = runner.invoke(cli, ["bench", "import", str(path), "--model", "llama-3.1-8b"])
    assert done.exit_code == 0, done.output
    assert "decode" in done.output and "with this calibration" in done.output
    assert "stored as run" in done.output
    plan = runner.invoke(cli, ["infer", "llama-3.1-8b", "--on", "rtx-4090", "--calibrated"])
    assert plan.exit_code == 0, plan.output
    assert "calibration from run 1, import: lb.json" in plan.output
    args = ["infer", "llama-3.1-8b", "--on", "rtx-4090", "--calibrated", "--json"]
    notes = json.loads(runner.invoke(cli, args).stdout)["notes"]
    assert any(n.startswith("--calibrated: calibration from run 1, import: lb.json") for n in notes)
