"""GPU verdicts come from data rows, each with its reason and source."""

from __future__ import annotations

import json

from click.testing import CliRunner

from rigwise.catalog.loader import read_csv
from rigwise.cli import cli
from rigwise.design.verdict import verdict
from rigwise.hardware import get_accelerator


def test_every_rule_has_a_source_and_a_known_severity() -> None:
    for row in read_csv("gpu_verdict_rules.csv"):
        assert row["severity"] in ("good", "caution", "bad") and row["source"]


def test_the_p40_is_for_llama_cpp_chat_only_and_says_why() -> None:
    result = verdict(get_accelerator("p40"))
    assert result.uses == {"chat": "caution", "serve": "bad", "finetune": "bad", "train": "bad"}
    rules = {r.rule for r in result.reasons["finetune"]}
    assert {"slow_fp16", "no_tensor_cores", "no_bf16", "eps_power", "passive_cooling",
            "cuda13_drops", "old_resale"} <= rules  # fmt: skip
    assert "cheap_memory" in {r.rule for r in result.reasons["chat"]}


def test_a_3090_is_a_good_buy_for_every_use() -> None:
    result = verdict(get_accelerator("rtx-3090"))
    assert set(result.uses.values()) == {"good"}
    assert "tensor_cores" in {r.rule for r in result.reasons["train"]}


def test_cli_verdict_text_and_json() -> None:
    text = CliRunner().invoke(cli, ["gpu", "p40", "--verdict"])
    assert text.exit_code == 0 and "bad for serve, finetune, train" in text.output
    assert "EPS" in text.output and "CUDA 13" in text.output
    data = json.loads(CliRunner().invoke(cli, ["gpu", "p40", "--verdict", "--json"]).output)
    assert data["uses"]["serve"] == "bad" and data["reasons"]["serve"][0]["source"]


def test_gpus_by_vendor_lists_cpus_and_socs() -> None:
    out = CliRunner().invoke(cli, ["gpus", "--vendor", "raspberrypi", "--json"]).output
    ids = [d["id"] for d in json.loads(out)["devices"]]
    assert "raspberry-pi-cm5-8gb" in ids


def test_a_device_that_is_not_a_gpu_gets_no_verdict() -> None:
    # before: 'rigwise gpu epyc-9654 --verdict' said 'good for chat, serve, finetune, train'
    # with no reason at all: no rule speaks to a CPU, and none was read as 'good'
    result = CliRunner().invoke(cli, ["gpu", "epyc-9654", "--verdict", "--json"])
    assert result.exit_code == 2
    assert "is a CPU (no verdict rule speaks to it)" in json.loads(result.output)["error"]
