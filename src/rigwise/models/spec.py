"""The model as rigwise sees it: ``ModelSpec`` with exact parameter counts.

Memory and compute arithmetic lives here as methods because every planner needs the same three
numbers: weight bytes in a quantization format, KV-cache bytes, and forward FLOPs per token.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rigwise.models.quant import QuantFormat, kv_cache_format, quant_format
from rigwise.serialize import JsonObject


@dataclass(frozen=True)
class MoESpec(JsonObject):
    """The mixture-of-experts part of a model: experts, how many run per token, their sizes."""

    num_experts: int  # routed experts per MoE layer
    experts_per_token: int  # routed experts active per token
    expert_intermediate_size: int
    num_shared_experts: int = 0
    shared_intermediate_size: int = 0
    num_moe_layers: int = 0  # layers with experts (others are dense)
    params_per_expert: int = 0  # one routed expert in one layer (all its matrices and biases)


@dataclass(frozen=True)
class MLASpec:
    """DeepSeek multi-head latent attention; the KV cache holds the latent plus the rope key."""

    kv_lora_rank: int
    q_lora_rank: int | None
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int


@dataclass(frozen=True)
class ModelSpec:
    """A model's architecture and exact parameter counts, as the estimators read them."""

    name: str
    architecture: str  # HF model_type: llama, qwen3_moe, deepseek_v3, gpt2, ...
    num_layers: int
    hidden_size: int
    intermediate_size: int  # dense MLP width (0 if every layer is MoE)
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    tie_word_embeddings: bool
    max_context: int
    params_total: int
    params_active: int
    params_embedding: int  # input embedding (+ untied output head counted separately in total)
    moe: MoESpec | None = None
    mla: MLASpec | None = None
    sliding_window: int | None = None
    sliding_window_layers: int = 0  # how many layers use the window (rest are global)
    gated_mlp: bool = True  # SwiGLU/GeGLU: 3 matrices; GPT-2 style: 2
    source: str = ""
    gguf_weights_bytes: float | None = None  # real tensor bytes when read from a GGUF file
    gguf_quant: str | None = None
    # Added by the model reader; everything above is the original contract.
    params_lm_head: int = 0  # untied output projection (0 when tied to the input embedding)
    params_positions: int = 0  # learned position embeddings (GPT-2, Megatron GPT, MPT)
    params_vectors: int = 0  # 1-D tensors: norms, biases, sinks, router score biases
    params_vectors_active: int | None = None  # used per token (None: all of params_vectors)
    params_mtp: int = 0  # DeepSeek multi-token-prediction module, not part of params_total
    params_vision: int = 0  # vision tower + projector of a multimodal config, not in params_total
    params_breakdown: tuple[tuple[str, int], ...] = ()  # named parts that sum to params_total
    linear_attention_layers: int = 0  # gated DeltaNet layers: no KV cache, a fixed-size state
    linear_state_bytes: float = 0.0  # that state per sequence, all such layers (model dtype)
    notes: tuple[str, ...] = field(default=())

    # ---- weights -------------------------------------------------------------------------
    @property
    def params_matmul(self) -> int:
        """Weights in matrix multiplies: everything but embeddings and 1-D tensors."""
        return (
            self.params_total
            - self.params_embedding
            - self.params_positions
            - self.params_lm_head
            - self.params_vectors
        )

    def weights_bytes(self, quant: str | None = None) -> float:
        """Bytes of all weights stored in ``quant`` (a name in ``QUANT_FORMATS``).

        Matrices take the format's effective bits per weight; embeddings, output head and 1-D
        tensors take the bits the format's tooling leaves them at (data columns of
        quant_formats.csv). For a spec read from a GGUF file, ``None`` or the file's own
        format gives the real tensor bytes.
        """
        if self.gguf_weights_bytes is not None and (
            quant is None or (self.gguf_quant or "").upper() == quant.upper()
        ):
            return self.gguf_weights_bytes
        fmt = quant_format(quant or "BF16")
        return self._weights_bits(fmt) / 8.0

    @property
    def params_expert_matrices(self) -> int:
        """Routed-expert matrices (gate, up, down of every expert in every MoE layer)."""
        if self.moe is None:
            return 0
        per_expert = 3 * self.hidden_size * self.moe.expert_intermediate_size
        return per_expert * self.moe.num_experts * self.moe.num_moe_layers

    def _weights_bits(self, fmt: QuantFormat) -> float:
        head = self.params_lm_head if self.params_lm_head else 0
        in_scope = self.params_matmul
        if fmt.scope == "experts":
            in_scope = self.params_expert_matrices
        return (
            in_scope * fmt.bits_per_weight
            + (self.params_matmul - in_scope) * fmt.other_matrix_bits
            + (self.params_embedding + self.params_positions) * fmt.embedding_bits
            + head * fmt.lm_head_bits
            + self.params_vectors * fmt.vector_bits
        )

    # ---- KV cache -----------------------------------------------------------------------
    def kv_elements_per_token_per_layer(self) -> int:
        """Cached values per token in one attention layer.

        MHA/GQA keep K and V per KV head: 2 x kv_heads x head_dim. MLA keeps the compressed
        latent and the shared rope key: kv_lora_rank + qk_rope_head_dim (DeepSeek-V2 paper,
        arXiv:2405.04434, Sec. 2.1.2 and Table 1).
        """
        if self.mla is not None:
            return self.mla.kv_lora_rank + self.mla.qk_rope_head_dim
        return 2 * self.num_kv_heads * self.head_dim

    def kv_cache_bytes_per_token(self, cache_dtype: str = "fp16") -> float:
        """KV bytes per token of context with every layer caching it (no window cap)."""
        bytes_per_value = kv_cache_format(cache_dtype).bits_per_weight / 8.0
        layers = self.num_layers - self.linear_attention_layers
        return layers * self.kv_elements_per_token_per_layer() * bytes_per_value

    def kv_cache_bytes(self, context_tokens: int, cache_dtype: str = "fp16") -> float:
        """KV bytes for one sequence of ``context_tokens``; windowed layers cap at the window."""
        per_layer_token = (
            self.kv_elements_per_token_per_layer()
            * kv_cache_format(cache_dtype).bits_per_weight
            / 8.0
        )
        cached = per_layer_token * self._cached_tokens_over_layers(context_tokens)
        return cached + self.linear_state_bytes  # linear-attention state: same at any length

    def _cached_tokens_over_layers(self, context_tokens: int) -> int:
        windowed = self.sliding_window_layers if self.sliding_window else 0
        full = self.num_layers - windowed - self.linear_attention_layers
        window_tokens = min(context_tokens, self.sliding_window or context_tokens)
        return full * context_tokens + windowed * window_tokens

    # ---- compute ------------------------------------------------------------------------
    def flops_per_token_parts(self, context: int) -> dict[str, float]:
        """Forward FLOPs for one token attending to ``context`` earlier tokens.

        2 FLOPs per multiply-add of every active matrix weight (the output head included, the
        embedding lookup not), plus attention scores and the weighted sum of values:
        2 x heads x (qk_dim + v_dim) x context per layer, which is the 4 x layers x context x
        d_attn of Kaplan et al. 2020 (arXiv:2001.08361) Table 1 and PaLM (arXiv:2204.02311)
        Appendix B; windowed layers attend to at most the window.
        """
        matmul_active = self.params_active - self.params_embedding - self.params_positions
        vectors = self.params_vectors_active
        matmul_active -= self.params_vectors if vectors is None else vectors
        if self.tie_word_embeddings:
            matmul_active += self.vocab_size * self.hidden_size  # the tied head still multiplies
        if self.mla is not None:
            qk_dim = self.mla.qk_nope_head_dim + self.mla.qk_rope_head_dim
            v_dim = self.mla.v_head_dim
        else:
            qk_dim = v_dim = self.head_dim
        attended = self._cached_tokens_over_layers(context)
        attention = 2.0 * self.num_attention_heads * (qk_dim + v_dim) * attended
        return {"matmul": 2.0 * matmul_active, "attention": attention}

    def flops_per_token(self, context: int) -> float:
        """Total of ``flops_per_token_parts`` (forward pass only; training is ~3x)."""
        return sum(self.flops_per_token_parts(context).values())

    # ---- edges --------------------------------------------------------------------------
    def to_dict(
        self,
        quants: tuple[str, ...] | None = None,
        cache_dtypes: tuple[str, ...] = ("fp16", "bf16", "fp8", "q8_0", "q4_0"),
    ) -> dict[str, Any]:
        """The documented JSON of ``rigwise model --json`` (keys in catalog/SCHEMA.md)."""
        from rigwise.models.quant import QUANT_FORMATS

        names = quants if quants is not None else tuple(QUANT_FORMATS)
        weights = {q: self.weights_bytes(q) for q in names}
        if self.gguf_weights_bytes is not None:
            weights["gguf_file"] = self.gguf_weights_bytes
        return {
            "name": self.name,
            "architecture": self.architecture,
            "params_total": self.params_total,
            "params_active": self.params_active,
            "params_mtp": self.params_mtp,
            "params_vision": self.params_vision,
            "params_breakdown": dict(self.params_breakdown),
            "layers": self.num_layers,
            "hidden_size": self.hidden_size,
            "intermediate_size": self.intermediate_size,
            "num_attention_heads": self.num_attention_heads,
            "num_kv_heads": self.num_kv_heads,
            "head_dim": self.head_dim,
            "vocab_size": self.vocab_size,
            "tie_word_embeddings": self.tie_word_embeddings,
            "max_context": self.max_context,
            "sliding_window": self.sliding_window,
            "sliding_window_layers": self.sliding_window_layers,
            "linear_attention_layers": self.linear_attention_layers,
            "linear_state_bytes": self.linear_state_bytes,
            "moe": self.moe.to_dict() if self.moe else None,
            "mla": None if self.mla is None else vars(self.mla).copy(),
            "kv_cache_bytes_per_token": {d: self.kv_cache_bytes_per_token(d) for d in cache_dtypes},
            "weights_bytes": weights,
            "gguf_quant": self.gguf_quant,
            "notes": list(self.notes),
            "source": self.source,
        }
