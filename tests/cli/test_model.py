"""`rigwise model` and `rigwise models` as a user runs them."""

from __future__ import annotations

import json

import pytest

from rigwise.cli import main

KEYS = {
    "name",
    "architecture",
    "params_total",
    "params_active",
    "layers",
    "hidden_size",
    "num_attention_heads",
    "num_kv_heads",
    "head_dim",
    "vocab_size",
    "max_context",
    "moe",
    "kv_cache_bytes_per_token",
    "weights_bytes",
    "source",
}


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_model_json_has_the_documented_keys(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "model", "meta-llama/Llama-3.1-70B", "--json")
    data = json.loads(out)
    assert code == 0
    assert set(data) >= KEYS
    assert data["params_total"] == 70_553_706_496
    assert data["kv_cache_bytes_per_token"]["fp16"] == 327_680
    assert data["weights_bytes"]["BF16"] == 2 * 70_553_706_496
    assert data["moe"] is None


def test_moe_model_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "model", "qwen3-30b-a3b", "--json")
    data = json.loads(out)
    assert code == 0 and data["moe"]["num_experts"] == 128
    assert data["params_active"] < data["params_total"] / 5


def test_hybrid_model_shows_its_linear_attention_state(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "model", "qwen3-next-80b-a3b", "--json")
    data = json.loads(out)
    assert code == 0 and data["linear_attention_layers"] == 36
    # 12 full-attention layers cache K and V (2 KV heads x 256); 36 DeltaNet layers do not.
    assert data["kv_cache_bytes_per_token"]["bf16"] == 12 * 2 * 2 * 256 * 2
    code, out, _ = _run(capsys, "model", "qwen3-next-80b-a3b")
    assert code == 0 and "36 of 48 layers (no KV cache)" in out


def test_model_table_reads_in_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "model", "Llama 3.1 70B Instruct")
    assert code == 0
    assert "70,553,706,496" in out and "Q4_K_M" in out and "128K ctx" in out
    assert "fine-tuned variant" in out


def test_unknown_model_exits_2_with_suggestions(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "model", "lama-3.1-70")
    assert code == 2 and "Did you mean" in err and "llama-3.1-70b" in err


def test_models_lists_the_catalog(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "models", "--json")
    rows = json.loads(out)
    assert code == 0 and len(rows) >= 50
    names = {r["name"] for r in rows}
    assert {"deepseek-v3", "gpt-oss-120b", "megatron-gpt-530b", "mpt-bench-70b"} <= names
    code, out, _ = _run(capsys, "models")
    assert code == 0 and "qwen3-235b-a22b" in out
