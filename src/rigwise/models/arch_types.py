"""The normalized architecture of a model (``Arch``) and key access to its config.json.

Shared by the family readers (``arch.py`` for llama-style, ``arch_gpt.py`` for GPT-style).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rigwise.errors import ModelFormatError
from rigwise.models.spec import MLASpec


@dataclass(frozen=True)
class MoEArch:
    """The experts of a parsed config: counts, sizes and which layers have them."""

    num_experts: int
    experts_per_token: int
    expert_intermediate_size: int
    moe_layers: tuple[int, ...]  # indices of the layers that have experts
    num_shared_experts: int = 0
    shared_intermediate_size: int = 0  # total width of the shared expert(s)
    shared_expert_gate: bool = False  # qwen2_moe: sigmoid gate Linear(h, 1)
    router_bias: bool = False  # gpt-oss router has a bias
    router_score_bias: bool = False  # DeepSeek-V3 e_score_correction_bias (noaux_tc)
    expert_bias: bool = False  # gpt-oss experts have biases


@dataclass(frozen=True)
class LinearAttention:
    """Gated DeltaNet layers (Qwen3-Next, Qwen3.5): a fixed-size state instead of a KV cache."""

    layers: tuple[int, ...]  # indices of the linear-attention layers
    num_key_heads: int
    num_value_heads: int
    key_head_dim: int
    value_head_dim: int
    conv_kernel: int
    recurrent_value_bytes: int = 2  # 4 where the config keeps the state in fp32 (Qwen3.5)

    @property
    def conv_dim(self) -> int:
        """Channels of the causal depthwise convolution over q, k and v."""
        return (
            2 * self.num_key_heads * self.key_head_dim + self.num_value_heads * self.value_head_dim
        )

    def state_bytes(self) -> int:
        """Per sequence, all layers: recurrent state (v heads x dk x dv) in its dtype + the conv
        window (conv_dim x (kernel - 1)) in the model dtype (2 bytes)."""
        recurrent = self.num_value_heads * self.key_head_dim * self.value_head_dim
        conv = self.conv_dim * (self.conv_kernel - 1)
        return len(self.layers) * (recurrent * self.recurrent_value_bytes + 2 * conv)


@dataclass(frozen=True)
class Arch:
    """A model config read into typed fields (HF config.json, GGUF or catalog file)."""

    model_type: str
    num_layers: int
    hidden_size: int
    intermediate_size: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    tie_word_embeddings: bool
    max_context: int
    norm_bias: bool = False  # LayerNorm (weight + bias) instead of RMSNorm (weight)
    norms_per_layer: int = 2
    qkv_bias: bool = False
    o_bias: bool = False
    gated_mlp: bool = True
    mlp_bias: bool = False
    qk_norm: bool = False  # per-head q/k RMSNorm weights of head_dim (qwen3, gemma3)
    qk_norm_full: bool = False  # q/k RMSNorm over the whole projection width (minimax_m2)
    learned_positions: int = 0
    attention_sinks: bool = False  # gpt-oss: one learned sink logit per head
    lm_head_bias: bool = False  # phi: the output head Linear has a bias
    attn_output_gate: bool = False  # qwen3_next: q_proj also emits a per-head output gate
    linear_attention: LinearAttention | None = None  # gated DeltaNet layers (qwen3_next)
    moe: MoEArch | None = None
    mla: MLASpec | None = None
    sliding_window: int | None = None
    sliding_window_layers: int = 0
    mtp_layers: int = 0
    vision_params: int = 0  # multimodal configs: vision tower + projector, outside the total
    notes: tuple[str, ...] = ()


class Config:
    """Key access that names the key and the file when one is missing."""

    def __init__(self, data: Mapping[str, Any], origin: str) -> None:
        self.data = data
        self.origin = origin

    def req(self, *keys: str) -> Any:
        for key in keys:
            if self.data.get(key) is not None:
                return self.data[key]
        raise ModelFormatError(
            f"{self.origin}: config key {' or '.join(map(repr, keys))} is missing.",
            hint="Use the model's config.json as published on the Hugging Face hub.",
        )

    def get(self, key: str, default: Any) -> Any:
        value = self.data.get(key)
        return default if value is None else value
