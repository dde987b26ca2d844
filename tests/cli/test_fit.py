"""`rigwise fit` through click's test runner."""

from __future__ import annotations

import json

from click.testing import CliRunner

from rigwise.cli import cli


def test_fit_json_ranks_every_model_with_quant_context_and_speed() -> None:
    result = CliRunner().invoke(cli, ["fit", "--on", "rtx-3090", "--json"])
    assert result.exit_code == 0
    report = json.loads(result.output)
    first = report["models"][0]
    assert first["status"] == "runs" and first["max_context"] > 0
    assert first["decode_tokens_per_s"] > 0 and first["quant"]
    assert report["seconds"] < 1.0


def test_fit_text_names_the_hardware_and_the_lever() -> None:
    result = CliRunner().invoke(cli, ["fit", "--on", "rtx-4090", "--use", "reasoning"])
    assert result.exit_code == 0
    assert "rtx-4090 (llama.cpp, context 4,096)" in result.output
    assert "deepseek-r1" in result.output and "x rtx-4090" in result.output


def test_fit_reads_a_context_as_infer_does() -> None:
    """'rigwise fit --context 8k' was "'8k' is not an integer" while infer takes 8k."""
    result = CliRunner().invoke(cli, ["fit", "--on", "rtx-4090", "--context", "8k", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["context"] == 8000
    result = CliRunner().invoke(cli, ["fit", "--on", "rtx-4090", "--context", "8x", "--json"])
    assert result.exit_code == 2
    assert "must be a whole number, e.g. 4096 or 8k" in json.loads(result.stdout)["error"]
