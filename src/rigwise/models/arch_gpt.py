"""Readers for GPT-style families: learned or no positions, LayerNorm, 2-matrix MLPs.

gpt2 (and the Megatron GPT sizes written as gpt2 configs), gpt_neox (Pythia), mpt, falcon, phi
(Phi-2).
Key names and defaults follow the corresponding ``transformers`` configuration classes.
"""

from __future__ import annotations

from collections.abc import Callable

from rigwise.models.arch_types import Arch, Config


def _read_gpt2(c: Config) -> Arch:
    hidden = int(c.req("n_embd", "hidden_size"))
    heads = int(c.req("n_head", "num_attention_heads"))
    positions = int(c.req("n_positions", "max_position_embeddings"))
    return Arch(
        model_type="gpt2",
        num_layers=int(c.req("n_layer", "num_hidden_layers")),
        hidden_size=hidden,
        intermediate_size=int(c.get("n_inner", 4 * hidden)),
        num_attention_heads=heads,
        num_kv_heads=heads,
        head_dim=hidden // heads,
        vocab_size=int(c.req("vocab_size")),
        tie_word_embeddings=bool(c.get("tie_word_embeddings", True)),
        max_context=positions,
        norm_bias=True,
        qkv_bias=True,
        o_bias=True,
        gated_mlp=False,
        mlp_bias=True,
        learned_positions=positions,
    )


def _read_gpt_neox(c: Config) -> Arch:
    hidden = int(c.req("hidden_size"))
    heads = int(c.req("num_attention_heads"))
    bias = bool(c.get("attention_bias", True))
    return Arch(
        model_type="gpt_neox",
        num_layers=int(c.req("num_hidden_layers")),
        hidden_size=hidden,
        intermediate_size=int(c.req("intermediate_size")),
        num_attention_heads=heads,
        num_kv_heads=heads,
        head_dim=hidden // heads,
        vocab_size=int(c.req("vocab_size")),
        tie_word_embeddings=bool(c.get("tie_word_embeddings", False)),
        max_context=int(c.get("max_position_embeddings", 0)),
        norm_bias=True,
        qkv_bias=bias,
        o_bias=bias,
        gated_mlp=False,
        mlp_bias=True,
    )


def _read_mpt(c: Config) -> Arch:
    # MPT: fused Wqkv, no_bias drops every bias (LayerNorm too); learned positions unless ALiBi.
    hidden = int(c.req("d_model"))
    heads = int(c.req("n_heads"))
    seq = int(c.req("max_seq_len"))
    attn = c.get("attn_config", {})
    alibi = bool(attn.get("alibi", False))
    bias = not bool(c.get("no_bias", False))
    learned = bool(c.get("learned_pos_emb", True)) and not alibi
    grouped = attn.get("attn_type") == "grouped_query_attention"
    kv_heads = int(attn.get("kv_n_heads", heads)) if grouped else heads
    return Arch(
        model_type="mpt",
        num_layers=int(c.req("n_layers")),
        hidden_size=hidden,
        intermediate_size=int(float(c.get("expansion_ratio", 4)) * hidden),
        num_attention_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=hidden // heads,
        vocab_size=int(c.req("vocab_size")),
        tie_word_embeddings=True,  # MPT reuses wte as the output head
        max_context=seq,
        norm_bias=bias,
        qkv_bias=bias,
        o_bias=bias,
        gated_mlp=False,
        mlp_bias=bias,
        learned_positions=seq if learned else 0,
    )


def _read_falcon(c: Config) -> Arch:
    # transformers FalconModel: fused query_key_value (kv heads: num_kv_heads with the new
    # decoder architecture, 1 with multi_query, else all heads), LayerNorm with bias, one
    # input LayerNorm with parallel attention (two with new_decoder_architecture), 4h MLP.
    hidden = int(c.req("hidden_size"))
    heads = int(c.req("num_attention_heads", "n_head"))
    new_arch = bool(c.get("new_decoder_architecture", False))
    if new_arch:
        kv_heads = int(c.get("num_kv_heads", heads))
        norms = int(c.get("num_ln_in_parallel_attn", 2))
    else:
        kv_heads = 1 if c.get("multi_query", True) else heads
        norms = 1 if c.get("parallel_attn", True) else 2
    bias = bool(c.get("bias", False))
    return Arch(
        model_type="falcon",
        num_layers=int(c.req("num_hidden_layers", "n_layer")),
        hidden_size=hidden,
        intermediate_size=int(c.get("ffn_hidden_size", 4 * hidden)),
        num_attention_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=hidden // heads,
        vocab_size=int(c.req("vocab_size")),
        tie_word_embeddings=bool(c.get("tie_word_embeddings", True)),
        max_context=int(c.get("max_position_embeddings", 2048)),
        norm_bias=True,
        norms_per_layer=norms,
        qkv_bias=bias,
        o_bias=bias,
        gated_mlp=False,
        mlp_bias=bias,
    )


def _read_phi(c: Config) -> Arch:
    # transformers PhiModel (Phi-1/1.5/2): q/k/v/dense with biases, one LayerNorm per layer feeding
    # attention and the MLP in parallel, fc1/fc2 with biases (GELU, not gated), a final LayerNorm
    # and an output head with a bias. Rotary covers partial_rotary_factor of each head (no
    # parameters). qk_layernorm (off in Phi-2) would add LayerNorms of head_dim, not counted.
    hidden = int(c.req("hidden_size"))
    heads = int(c.req("num_attention_heads"))
    return Arch(
        model_type="phi",
        num_layers=int(c.req("num_hidden_layers")),
        hidden_size=hidden,
        intermediate_size=int(c.req("intermediate_size")),
        num_attention_heads=heads,
        num_kv_heads=int(c.get("num_key_value_heads", heads)),
        head_dim=hidden // heads,
        vocab_size=int(c.req("vocab_size")),
        tie_word_embeddings=bool(c.get("tie_word_embeddings", False)),
        max_context=int(c.get("max_position_embeddings", 2048)),
        norm_bias=True,
        norms_per_layer=1,
        qkv_bias=True,
        o_bias=True,
        gated_mlp=False,
        mlp_bias=True,
        lm_head_bias=True,
    )


GPT_FAMILY: dict[str, Callable[[Config], Arch]] = {
    "gpt2": _read_gpt2,
    "gpt_neox": _read_gpt_neox,
    "mpt": _read_mpt,
    "falcon": _read_falcon,
    "phi": _read_phi,
}
