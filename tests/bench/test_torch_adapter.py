"""The PyTorch paths that run on a CPU: matmul, copy, and the Llama model's KV cache."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", minversion="2.0")  # a leftover torch/ folder has no version

from rigwise.bench import torch_adapter as ta  # noqa: E402
from rigwise.bench import torch_llm as tl  # noqa: E402

SHAPE = tl.LlamaShape(
    hidden_size=64,
    intermediate_size=128,
    num_layers=2,
    num_attention_heads=4,
    num_kv_heads=2,
    head_dim=16,
    vocab_size=100,
)


def test_cached_decode_matches_a_full_forward() -> None:
    # Rotary positions, the GQA cache and causal masking must agree between the two paths.
    model = tl._Llama(torch, SHAPE, "cpu", torch.float32)
    tokens = torch.randint(0, SHAPE.vocab_size, (1, 9))
    with torch.inference_mode():
        full = model.forward(tokens)[:, -1]
        model.new_cache(1, 16)
        model.forward(tokens[:, :8], last_only=True)
        cached = model.forward(tokens[:, 8:], start=8)[:, -1]
    assert torch.allclose(full, cached, atol=1e-4)


def test_attention_is_causal() -> None:
    model = tl._Llama(torch, SHAPE, "cpu", torch.float32)
    tokens = torch.randint(0, SHAPE.vocab_size, (1, 6))
    changed = tokens.clone()
    changed[0, 5] = (tokens[0, 5] + 1) % SHAPE.vocab_size
    with torch.inference_mode():
        before, after = model.forward(tokens), model.forward(changed)
    assert torch.allclose(before[:, :5], after[:, :5], atol=1e-5)  # earlier positions unchanged
    assert not torch.allclose(before[:, 5], after[:, 5])


def test_weight_bytes_count_every_parameter() -> None:
    model = tl._Llama(torch, SHAPE, "cpu", torch.float32)
    h, i, v = SHAPE.hidden_size, SHAPE.intermediate_size, SHAPE.vocab_size
    per_layer = h * 64 + 2 * h * 32 + 64 * h + 3 * h * i + 2 * h
    assert model.weight_bytes() == 4 * (2 * v * h + h + SHAPE.num_layers * per_layer)


def test_cpu_matmul_and_copy_are_positive() -> None:
    assert ta.matmul_flops("cpu", "fp32", 128, repeats=2) > 0
    assert ta.device_copy_bandwidth("cpu", 2**20, repeats=2) > 0


def test_finetune_step_updates_weights_and_reports_memory() -> None:
    result = tl.finetune_step(SHAPE, "cpu", "fp32", batch=1, seq=16)
    assert result.step_seconds > 0 and result.tokens == 16


def test_adamw_moves_weights_against_the_gradient() -> None:
    weight = torch.ones(3, requires_grad=True)
    optimizer = tl._AdamW(torch, [weight], lr=0.1)
    (weight * torch.tensor([1.0, -1.0, 0.0])).sum().backward()
    optimizer.step()
    assert weight[0] < 1.0 and weight[1] > 1.0
    assert weight.grad is None
