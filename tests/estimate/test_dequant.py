"""Dequantisation traffic of unfused quantized kernels (``estimate.dequant``)."""

from __future__ import annotations

import pytest

from rigwise.api.infer import plan_inference
from rigwise.estimate.dequant import extra_traffic_ratio
from rigwise.models.quant import quant_format


def _decode(quant: str, engine: str = "transformers") -> float:
    plan = plan_inference(
        model="llama-2-7b",
        on="a100-sxm-40gb",
        quant=quant,
        engine=engine,
        prompt=16,
        gen=128,
        levers=False,
    )
    return plan.decode.tokens_per_s


def test_bitsandbytes_nf4_moves_four_extra_bytes_per_weight() -> None:
    # dequantize to 16 bits (2 B written) + a 16-bit matmul reading them (2 B), per weight.
    packed = quant_format("NF4").bits_per_weight / 8
    assert extra_traffic_ratio("transformers", "NF4") == pytest.approx(4 / packed)


def test_fused_kernels_read_the_packed_weights_once() -> None:
    assert extra_traffic_ratio("vllm", "GPTQ-4bit-g128") == 0.0
    assert extra_traffic_ratio("transformers", "AWQ-4bit-g128") == 0.0
    assert extra_traffic_ratio("llama.cpp", "Q4_K_M") == 0.0


def test_nf4_against_fp16_in_transformers_on_a100() -> None:
    # bitsandbytes-foundation/bitsandbytes issue #181 (2023-08-03): LLaMA 7B on an A100,
    # transformers, NF4 decodes at 56 % of FP16's speed (not a validation row; not fitted).
    ratio = _decode("NF4") / _decode("F16")
    assert ratio == pytest.approx(0.56, rel=0.08)


def test_nf4_is_fast_again_where_the_kernel_is_fused() -> None:
    # The same 4-bit weights in llama.cpp-style fused kernels decode faster than 16-bit.
    assert _decode("NF4", engine="vllm") > _decode("F16", engine="vllm")
