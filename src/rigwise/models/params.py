"""Exact parameter counts of an ``Arch``, as named parts.

Each part is the element count of the tensors ``transformers`` creates for the architecture
(the same counts a safetensors file holds), so totals match the published counts to the
parameter. Per layer: attention projections (+ biases), q/k norms, sinks, the MLP or the MoE
block (router, routed experts, shared experts), and the layer norms (RMSNorm: weight only;
LayerNorm: weight and bias).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from rigwise.models.arch import Arch, MoEArch
from rigwise.models.arch_types import LinearAttention


@dataclass(frozen=True)
class ParamCount:
    """Exact parameter counts: by part, in total, active per token, embeddings."""

    parts: tuple[tuple[str, int], ...]  # sums to total
    total: int
    active: int  # per token: routed experts only experts_per_token of num_experts
    embedding: int
    positions: int
    lm_head: int
    vectors: int  # 1-D tensors (norms, biases, sinks): stored unquantized
    vectors_active: int  # of which used per token (idle experts' biases left out)
    per_expert: int
    mtp: int  # DeepSeek multi-token-prediction module, outside total


def _norm(arch: Arch) -> int:
    return arch.hidden_size * (2 if arch.norm_bias else 1)


def _attention(arch: Arch, index: int) -> tuple[int, int]:
    """(matrix weights, 1-D weights) of the attention (or linear-attention) block of a layer."""
    h, hd = arch.hidden_size, arch.head_dim
    if arch.mla is not None:
        return _mla(arch)
    linear = arch.linear_attention
    if linear is not None and index in linear.layers:
        return _gated_deltanet(arch, linear)
    q, kv = arch.num_attention_heads * hd, arch.num_kv_heads * hd
    matrices = h * q * (2 if arch.attn_output_gate else 1) + 2 * h * kv + q * h
    vectors = (q + 2 * kv) * arch.qkv_bias + h * arch.o_bias
    qk_norm_width = q + kv if arch.qk_norm_full else 2 * hd
    vectors += qk_norm_width * arch.qk_norm + arch.num_attention_heads * arch.attention_sinks
    return matrices, vectors


def _gated_deltanet(arch: Arch, linear: LinearAttention) -> tuple[int, int]:
    # transformers Qwen3NextGatedDeltaNet: in_proj_qkvz (h -> 2 key_dim + 2 value_dim),
    # in_proj_ba (h -> 2 v heads), a depthwise conv1d over q/k/v (conv_dim x kernel, no bias),
    # dt_bias and A_log per v head, a gated RMSNorm of value_head_dim, out_proj (value_dim -> h).
    h = arch.hidden_size
    key_dim = linear.num_key_heads * linear.key_head_dim
    value_dim = linear.num_value_heads * linear.value_head_dim
    matrices = h * (2 * key_dim + 2 * value_dim) + h * 2 * linear.num_value_heads
    matrices += value_dim * h
    vectors = linear.conv_dim * linear.conv_kernel + 2 * linear.num_value_heads
    vectors += linear.value_head_dim
    return matrices, vectors


def _mla(arch: Arch) -> tuple[int, int]:
    # DeepSeek-V2/V3 MLA (arXiv:2405.04434 Sec. 2.1): low-rank q (optional) and kv projections,
    # each latent normalized by an RMSNorm of its rank.
    assert arch.mla is not None
    m, h, n = arch.mla, arch.hidden_size, arch.num_attention_heads
    q_head = m.qk_nope_head_dim + m.qk_rope_head_dim
    if m.q_lora_rank:
        q, q_vec = h * m.q_lora_rank + m.q_lora_rank * n * q_head, m.q_lora_rank
    else:
        q, q_vec = h * n * q_head, 0
    kv = h * (m.kv_lora_rank + m.qk_rope_head_dim)
    kv += m.kv_lora_rank * n * (m.qk_nope_head_dim + m.v_head_dim)
    out = n * m.v_head_dim * h
    return q + kv + out, q_vec + m.kv_lora_rank


def _mlp(arch: Arch, width: int) -> tuple[int, int]:
    h = arch.hidden_size
    matrices = (3 if arch.gated_mlp else 2) * h * width
    vectors = ((2 * width if arch.gated_mlp else width) + h) * arch.mlp_bias
    return matrices, vectors


def _expert(arch: Arch, moe: MoEArch) -> tuple[int, int]:
    h, w = arch.hidden_size, moe.expert_intermediate_size
    return 3 * h * w, (2 * w + h) * moe.expert_bias


def _moe_fixed(arch: Arch, moe: MoEArch) -> tuple[int, int]:
    """Router and shared experts of one MoE layer (always active)."""
    h, e = arch.hidden_size, moe.num_experts
    matrices = h * e + 3 * h * moe.shared_intermediate_size + h * moe.shared_expert_gate
    vectors = e * moe.router_bias + e * moe.router_score_bias
    return matrices, vectors


def _layer(arch: Arch, index: int) -> tuple[int, int, int]:
    """(always-active params, routed-expert params, 1-D params) of layer ``index``."""
    attn, attn_vec = _attention(arch, index)
    norms = arch.norms_per_layer * _norm(arch)
    moe = arch.moe
    if moe is not None and index in moe.moe_layers:
        fixed, fixed_vec = _moe_fixed(arch, moe)
        expert, expert_vec = _expert(arch, moe)
        experts = moe.num_experts * (expert + expert_vec)
        vectors = attn_vec + fixed_vec + norms + moe.num_experts * expert_vec
        return attn + attn_vec + norms + fixed + fixed_vec, experts, vectors
    mlp, mlp_vec = _mlp(arch, arch.intermediate_size)
    return attn + attn_vec + norms + mlp + mlp_vec, 0, attn_vec + norms + mlp_vec


def count_params(arch: Arch) -> ParamCount:
    h, v = arch.hidden_size, arch.vocab_size
    embedding = v * h
    positions = arch.learned_positions * h
    head_bias = v * arch.lm_head_bias  # a 1-D tensor: counted with the vectors, not the matrix
    lm_head = 0 if arch.tie_word_embeddings else v * h
    dense = routed = vectors = 0
    for index in range(arch.num_layers):
        layer_dense, layer_routed, layer_vectors = _layer(arch, index)
        dense, routed, vectors = dense + layer_dense, routed + layer_routed, vectors + layer_vectors
    final_norm = _norm(arch)
    parts = (
        ("embedding", embedding),
        ("position_embedding", positions),
        ("layers_dense", dense),
        ("layers_experts", routed),
        ("final_norm", final_norm),
        ("lm_head", lm_head + head_bias),
    )
    total = sum(count for _, count in parts)
    per_expert, inactive, inactive_vectors = 0, 0, 0
    if arch.moe is not None:
        expert, expert_vec = _expert(arch, arch.moe)
        per_expert = expert + expert_vec
        idle = (arch.moe.num_experts - arch.moe.experts_per_token) * len(arch.moe.moe_layers)
        inactive, inactive_vectors = idle * per_expert, idle * expert_vec
    return ParamCount(
        parts=tuple(p for p in parts if p[1]),
        total=total,
        active=total - inactive,
        embedding=embedding,
        positions=positions,
        lm_head=lm_head,
        vectors=vectors + final_norm + head_bias,
        vectors_active=vectors + final_norm + head_bias - inactive_vectors,
        per_expert=per_expert,
        mtp=_mtp(arch),
    )


def _mtp(arch: Arch) -> int:
    """DeepSeek-V3 MTP module (arXiv:2412.19437 Sec. 2.2), per depth: two RMSNorms, a 2h x h
    projection, one MoE decoder layer, and (in the HF checkpoint) its own embedding, output
    norm and output head (``model.layers.61.*``)."""
    if not arch.mtp_layers:
        return 0
    h, index = arch.hidden_size, arch.num_layers
    if arch.moe is not None:
        arch = replace(arch, moe=replace(arch.moe, moe_layers=(*arch.moe.moe_layers, index)))
    layer_dense, layer_routed, _ = _layer(arch, index)
    per_depth = 3 * h + 2 * h * h + layer_dense + layer_routed + 2 * arch.vocab_size * h
    return arch.mtp_layers * per_depth
