"""HF config readers: structure per family, nested configs, and the errors users see."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rigwise.errors import InputError, ModelFormatError, UnknownNameError
from rigwise.models import load_model
from rigwise.models.catalog import catalog_entries


def _config(name: str) -> dict[str, Any]:
    return dict(catalog_entries()[name].config)


def _write(tmp_path: Path, config: dict[str, Any]) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return path


def test_a_config_file_and_its_folder_read_like_the_catalog(tmp_path: Path) -> None:
    path = _write(tmp_path, _config("qwen2.5-7b"))
    assert load_model(path).params_total == load_model("qwen2.5-7b").params_total
    assert load_model(str(tmp_path)).params_total == load_model("qwen2.5-7b").params_total


def test_deepseek_v3_dense_and_moe_layers() -> None:
    spec = load_model("deepseek-v3")
    assert spec.moe is not None and spec.mla is not None
    assert spec.moe.num_moe_layers == 61 - 3  # first_k_dense_replace = 3
    assert spec.moe.num_shared_experts == 1
    assert spec.intermediate_size == 18432


def test_llama4_maverick_interleaves_moe_layers() -> None:
    scout, maverick = load_model("llama-4-scout"), load_model("llama-4-maverick")
    assert scout.moe is not None and maverick.moe is not None
    assert scout.moe.num_moe_layers == 48
    assert maverick.moe.num_moe_layers == 24  # interleave_moe_layer_step = 2
    assert scout.params_vision == 0 and any("text model" in n for n in scout.notes)


def test_qwen2_has_qkv_bias_and_qwen3_has_qk_norm(tmp_path: Path) -> None:
    config = _config("qwen2.5-7b")
    with_bias = load_model(_write(tmp_path, config)).params_total
    config["model_type"] = "llama"  # llama reads the same keys without the q/k/v biases
    config["attention_bias"] = False
    plain = load_model(_write(tmp_path, config)).params_total
    q, kv = 3584, 4 * 128
    assert with_bias - plain == 28 * (q + 2 * kv)


def test_gemma2_window_alternates_and_gemma3_is_five_to_one() -> None:
    assert load_model("gemma-2-9b").sliding_window_layers == 21
    g3 = load_model("gemma-3-27b")
    assert (g3.sliding_window, g3.sliding_window_layers) == (1024, 62 - 62 // 6)


def test_gpt_oss_layer_types_and_sinks() -> None:
    spec = load_model("gpt-oss-20b")
    assert spec.sliding_window == 128 and spec.sliding_window_layers == 12
    assert spec.moe is not None and spec.moe.experts_per_token == 4


def test_unknown_model_type_lists_supported(tmp_path: Path) -> None:
    path = _write(tmp_path, {"model_type": "rwkv", "hidden_size": 8})
    with pytest.raises(ModelFormatError) as err:
        load_model(path)
    assert "rwkv" in str(err.value) and "qwen3_moe" in str(err.value)
    assert str(path) in str(err.value)


def test_unknown_type_with_llama_keys_is_read_and_flagged(tmp_path: Path) -> None:
    config = _config("llama-2-7b")
    config["model_type"] = "my_llama_fork"
    spec = load_model(_write(tmp_path, config))
    assert spec.params_total == 6_738_415_616
    assert any("llama-like" in note for note in spec.notes)


def test_missing_key_names_key_and_file(tmp_path: Path) -> None:
    config = _config("mistral-7b-v0.1")
    del config["num_hidden_layers"]
    path = _write(tmp_path, config)
    with pytest.raises(ModelFormatError, match="num_hidden_layers") as err:
        load_model(path)
    assert str(path) in str(err.value)


def test_bad_json_and_missing_file(tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    with pytest.raises(ModelFormatError, match="not a JSON config"):
        load_model(bad)
    with pytest.raises(ModelFormatError, match="does not exist"):
        load_model(tmp_path / "nope" / "config.json")


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("llama-3.1-70b", "llama-3.1-70b"),
        ("meta-llama/Llama-3.1-70B", "llama-3.1-70b"),
        ("Llama 3.1 70B Instruct", "llama-3.1-70b"),
        ("meta-llama/Meta-Llama-3.1-70B-Instruct", "llama-3.1-70b"),
        ("qwen3-30b-a3b", "qwen3-30b-a3b"),
        ("Qwen/Qwen2.5-7B-Instruct", "qwen2.5-7b"),
        ("google/gemma-2-9b-it", "gemma-2-9b"),
        ("Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b"),
        ("DeepSeek-R1", "deepseek-r1"),
    ],
)
def test_names_people_type(typed: str, expected: str) -> None:
    assert load_model(typed).name == expected


def test_instruct_variant_says_so() -> None:
    assert any("fine-tuned variant" in n for n in load_model("Llama 3.1 70B Instruct").notes)
    assert load_model("llama-3.1-70b").notes == ()


def test_unknown_name_suggests_three() -> None:
    with pytest.raises(UnknownNameError) as err:
        load_model("lama-3.1-70")
    assert len(err.value.suggestions) == 3
    assert "llama-3.1-70b" in err.value.suggestions


def test_falcon_7b_counts_every_tensor_of_the_checkpoint(tmp_path: Path) -> None:
    config = {
        "model_type": "falcon",
        "hidden_size": 4544,
        "num_attention_heads": 71,
        "num_hidden_layers": 32,
        "multi_query": True,
        "parallel_attn": True,
        "bias": False,
        "new_decoder_architecture": False,
        "vocab_size": 65024,
    }
    h, head = 4544, 64
    per_layer = {  # tensor shapes of one FalconDecoderLayer (multi-query: 1 K and 1 V head)
        "input_layernorm.weight": h,
        "input_layernorm.bias": h,
        "self_attention.query_key_value.weight": (h + 2 * head) * h,
        "self_attention.dense.weight": h * h,
        "mlp.dense_h_to_4h.weight": 4 * h * h,
        "mlp.dense_4h_to_h.weight": 4 * h * h,
    }
    expected = 65024 * h + 32 * sum(per_layer.values()) + 2 * h  # embeddings (tied), ln_f
    spec = load_model(_write(tmp_path, config))
    assert spec.params_total == expected
    assert spec.num_kv_heads == 1 and spec.tie_word_embeddings


@pytest.mark.parametrize(
    ("change", "says"),
    [
        # before: read as a 5.9 B model (7 KV heads cannot each serve a group of 32 heads)
        ({"num_key_value_heads": 7}, "'num_kv_heads' = 7 does not divide num_attention_heads = 32"),
        # before: "key 'params_active' = 435263115264 is not within params_total": not a key
        # of the file; the top-k is
        ({"num_local_experts": 8, "num_experts_per_tok": 100}, "'experts_per_token' = 100"),
    ],
)
def test_inconsistent_head_and_expert_counts_name_the_key(
    tmp_path: Path, change: dict[str, int], says: str
) -> None:
    config = {**_config("mixtral-8x7b"), **change}
    with pytest.raises(ModelFormatError, match=says):
        load_model(_write(tmp_path, config))


@pytest.mark.parametrize("name", ["", "  "])
def test_an_empty_model_name_says_so(name: str) -> None:
    # before: '' was the path '.': "Model file 'config.json' does not exist"
    with pytest.raises(InputError, match="Empty model name"):
        load_model(name)


def test_a_config_not_named_config_json_is_named_by_itself(tmp_path: Path) -> None:
    # before: ~/Downloads/mixtral.json was the model 'Downloads' (its folder) in every plan
    config = {k: v for k, v in _config("qwen2.5-7b").items() if k != "_name_or_path"}
    (tmp_path / "downloads").mkdir()
    other = tmp_path / "downloads" / "my-qwen.json"
    other.write_text(json.dumps(config))
    assert load_model(other).name == "my-qwen"
    folder = tmp_path / "Qwen2.5-7B"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    assert load_model(folder).name == "Qwen2.5-7B"  # an HF download: named by its folder
