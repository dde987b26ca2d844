"""A .gguf file is planned at its own tensor types (issue 13): without --quant the plan uses the
file's type and its real per-tensor bytes, not the engine's default Q4_K_M."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import rigwise
from rigwise.models import load_model

gguf = pytest.importorskip("gguf")
Q8 = gguf.GGMLQuantizationType.Q8_0
HIDDEN, FFN, VOCAB, LAYERS = 256, 512, 2048, 2


@pytest.fixture(scope="module")
def q8_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Q8_0 matrices, one F16 matrix per layer and F32 norms: a mixed-type file."""
    path = tmp_path_factory.mktemp("gguf") / "mixed.Q8_0.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("mixed-llama")
    writer.add_block_count(LAYERS)
    writer.add_context_length(4096)
    writer.add_embedding_length(HIDDEN)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(4)
    writer.add_head_count_kv(2)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    rng = np.random.default_rng(0)
    writer.add_tensor(
        "token_embd.weight",
        gguf.quants.quantize(rng.standard_normal((VOCAB, HIDDEN)).astype(np.float32), Q8),
        raw_dtype=Q8,
    )
    for i in range(LAYERS):
        writer.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(HIDDEN, dtype=np.float32))
        writer.add_tensor(
            f"blk.{i}.attn_k.weight",
            rng.standard_normal((HIDDEN // 2, HIDDEN)).astype(np.float16),
        )
        for name, shape in (("attn_q", (HIDDEN, HIDDEN)), ("ffn_up", (FFN, HIDDEN))):
            data = rng.standard_normal(shape).astype(np.float32)
            packed = gguf.quants.quantize(data, Q8)
            writer.add_tensor(f"blk.{i}.{name}.weight", packed, raw_dtype=Q8)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _q8(n: int) -> int:
    return n // 32 * 34  # Q8_0: blocks of 32 weights in 34 bytes (fp16 scale + 32 int8)


def _file_tensor_bytes() -> int:
    q8 = _q8
    per_layer = 4 * HIDDEN + 2 * (HIDDEN // 2) * HIDDEN + q8(HIDDEN * HIDDEN) + q8(FFN * HIDDEN)
    return q8(VOCAB * HIDDEN) + LAYERS * per_layer


@pytest.mark.parametrize("engine", ["llama.cpp", "ollama"])
def test_gguf_is_planned_at_its_own_type_and_bytes(q8_file: Path, engine: str) -> None:
    plan = rigwise.plan_inference(model=str(q8_file), on="rtx-4090", engine=engine)
    assert plan.quant == "Q8_0"
    assert plan.memory.weights_bytes == pytest.approx(_file_tensor_bytes())
    assert load_model(q8_file).gguf_weights_bytes == _file_tensor_bytes()


def test_an_explicit_quant_still_wins(q8_file: Path) -> None:
    plan = rigwise.plan_inference(model=str(q8_file), on="rtx-4090", quant="Q4_K_M")
    assert plan.quant == "Q4_K_M"
    assert plan.memory.weights_bytes < _file_tensor_bytes()


def test_a_catalog_model_keeps_the_engine_default() -> None:
    assert rigwise.plan_inference(model="llama-3.1-8b", on="rtx-4090").quant == "Q4_K_M"
