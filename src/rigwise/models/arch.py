"""Read an HF ``config.json`` dict into one normalized description, ``Arch``.

Each supported ``model_type`` maps its own key names and defaults (as in the corresponding
``transformers`` configuration class) onto the same fields, so that counting parameters
(``params.py``) is one code path for every family. ``Arch`` and ``Config`` live in
``arch_types.py`` so the family readers (here and ``arch_gpt.py``) share them without a cycle.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from rigwise.errors import ModelFormatError
from rigwise.models.arch_gpt import GPT_FAMILY
from rigwise.models.arch_types import Arch, Config, LinearAttention, MoEArch
from rigwise.models.spec import MLASpec
from rigwise.models.vision import vision_params


def _llama_like(c: Config, model_type: str) -> Arch:
    hidden = int(c.req("hidden_size"))
    heads = int(c.req("num_attention_heads"))
    bias = bool(c.get("attention_bias", False))
    return Arch(
        model_type=model_type,
        num_layers=int(c.req("num_hidden_layers")),
        hidden_size=hidden,
        intermediate_size=int(c.req("intermediate_size")),
        num_attention_heads=heads,
        num_kv_heads=int(c.get("num_key_value_heads", heads)),
        head_dim=int(c.get("head_dim", hidden // heads)),
        vocab_size=int(c.req("vocab_size")),
        tie_word_embeddings=bool(c.get("tie_word_embeddings", False)),
        max_context=int(c.get("max_position_embeddings", 0)),
        qkv_bias=bias,
        o_bias=bias,
        mlp_bias=bool(c.get("mlp_bias", False)),
    )


def _window(c: Config, arch: Arch, default_sliding: int | None = None) -> Arch:
    """Sliding-window layers from ``layer_types`` when given, else the family's rule."""
    window = c.get("sliding_window", None)
    if not window or c.get("use_sliding_window", True) is False:
        return arch
    types = c.get("layer_types", None)
    if types:
        count = sum(1 for t in types if t == "sliding_attention")
    else:
        count = arch.num_layers if default_sliding is None else default_sliding
    if count == 0 or int(window) >= arch.max_context > 0:
        return arch
    return replace(arch, sliding_window=int(window), sliding_window_layers=count)


def _read_llama(c: Config) -> Arch:
    return _llama_like(c, "llama")


def _read_mistral(c: Config) -> Arch:
    return _window(c, _llama_like(c, "mistral"))


def _read_mixtral(c: Config) -> Arch:
    arch = _llama_like(c, "mixtral")
    moe = MoEArch(
        num_experts=int(c.req("num_local_experts")),
        experts_per_token=int(c.req("num_experts_per_tok")),
        expert_intermediate_size=arch.intermediate_size,
        moe_layers=tuple(range(arch.num_layers)),
    )
    return _window(c, replace(arch, moe=moe, intermediate_size=0))


def _read_qwen2(c: Config) -> Arch:
    # Qwen2 has q/k/v biases but no o_proj bias (transformers Qwen2Attention).
    arch = replace(_llama_like(c, "qwen2"), qkv_bias=True, o_bias=False)
    return _window(c, arch, default_sliding=_qwen_sliding_layers(c, arch))


def _qwen_sliding_layers(c: Config, arch: Arch) -> int:
    return max(0, arch.num_layers - int(c.get("max_window_layers", arch.num_layers)))


def _qwen_moe_layers(c: Config, layers: int) -> tuple[int, ...]:
    step = int(c.get("decoder_sparse_step", 1))
    dense = set(c.get("mlp_only_layers", []))
    return tuple(i for i in range(layers) if i not in dense and (i + 1) % step == 0)


def _read_qwen2_moe(c: Config) -> Arch:
    arch = _read_qwen2(c)
    moe = MoEArch(
        num_experts=int(c.req("num_experts")),
        experts_per_token=int(c.req("num_experts_per_tok")),
        expert_intermediate_size=int(c.req("moe_intermediate_size")),
        moe_layers=_qwen_moe_layers(c, arch.num_layers),
        num_shared_experts=1,
        shared_intermediate_size=int(c.req("shared_expert_intermediate_size")),
        shared_expert_gate=True,
    )
    return replace(arch, model_type="qwen2_moe", moe=moe)


def _read_qwen3(c: Config) -> Arch:
    arch = replace(_llama_like(c, "qwen3"), qk_norm=True)
    return _window(c, arch, default_sliding=_qwen_sliding_layers(c, arch))


def _read_qwen3_moe(c: Config) -> Arch:
    arch = replace(_read_qwen3(c), model_type="qwen3_moe")
    moe = MoEArch(
        num_experts=int(c.req("num_experts")),
        experts_per_token=int(c.req("num_experts_per_tok")),
        expert_intermediate_size=int(c.req("moe_intermediate_size")),
        moe_layers=_qwen_moe_layers(c, arch.num_layers),
    )
    return replace(arch, moe=moe)


def _read_gemma(c: Config) -> Arch:
    arch = _llama_like(c, "gemma")
    return replace(arch, tie_word_embeddings=bool(c.get("tie_word_embeddings", True)))


def _read_gemma2(c: Config) -> Arch:
    # Gemma 2: pre- and post-norms around attention and MLP; even layers use the window.
    arch = replace(_read_gemma(c), model_type="gemma2", norms_per_layer=4)
    return _window(c, arch, default_sliding=(arch.num_layers + 1) // 2)


def _read_gemma3(c: Config) -> Arch:
    # Gemma 3: as Gemma 2 plus q/k norms; 5 local layers per global one (sliding_window_pattern).
    arch = replace(_read_gemma(c), model_type="gemma3", norms_per_layer=4, qk_norm=True)
    pattern = int(c.get("sliding_window_pattern", 6))
    local = sum(1 for i in range(arch.num_layers) if (i + 1) % pattern != 0)
    return _window(c, arch, default_sliding=local)


def _read_phi3(c: Config) -> Arch:
    # Fused qkv_proj and gate_up_proj hold the same weights as separate matrices.
    return _window(c, _llama_like(c, "phi3"))


def _read_deepseek(c: Config) -> Arch:
    arch = replace(_llama_like(c, str(c.req("model_type"))), tie_word_embeddings=False)
    q_lora = c.get("q_lora_rank", None)
    mla = MLASpec(
        kv_lora_rank=int(c.req("kv_lora_rank")),
        q_lora_rank=None if q_lora is None else int(q_lora),
        qk_nope_head_dim=int(c.req("qk_nope_head_dim")),
        qk_rope_head_dim=int(c.req("qk_rope_head_dim")),
        v_head_dim=int(c.req("v_head_dim")),
    )
    first_dense = int(c.get("first_k_dense_replace", 0))
    step = int(c.get("moe_layer_freq", 1))
    moe = MoEArch(
        num_experts=int(c.req("n_routed_experts")),
        experts_per_token=int(c.req("num_experts_per_tok")),
        expert_intermediate_size=int(c.req("moe_intermediate_size")),
        moe_layers=tuple(i for i in range(first_dense, arch.num_layers) if i % step == 0),
        num_shared_experts=int(c.get("n_shared_experts", 0)),
        shared_intermediate_size=int(c.get("n_shared_experts", 0))
        * int(c.req("moe_intermediate_size")),
        router_score_bias=c.get("topk_method", "") == "noaux_tc",
    )
    return replace(
        arch,
        head_dim=mla.qk_nope_head_dim + mla.qk_rope_head_dim,
        num_kv_heads=arch.num_attention_heads,
        mla=mla,
        moe=moe,
        mtp_layers=int(c.get("num_nextn_predict_layers", 0)),
    )


def _read_glm4_moe(c: Config) -> Arch:
    # transformers Glm4MoeConfig: q/k/v biases (attention_bias) but none on o_proj, optional
    # per-head q/k RMSNorm (use_qk_norm), partial rotary (no parameters). The first
    # first_k_dense_replace layers are dense; the rest are MoE with a sigmoid router that has an
    # e_score_correction_bias and n_shared_experts always-on experts of moe_intermediate_size.
    arch = replace(_llama_like(c, "glm4_moe"), o_bias=False)
    arch = replace(arch, qk_norm=bool(c.get("use_qk_norm", False)))
    width = int(c.req("moe_intermediate_size"))
    shared = int(c.get("n_shared_experts", 0))
    first_dense = int(c.get("first_k_dense_replace", 0))
    moe = MoEArch(
        num_experts=int(c.req("n_routed_experts")),
        experts_per_token=int(c.req("num_experts_per_tok")),
        expert_intermediate_size=width,
        moe_layers=tuple(range(first_dense, arch.num_layers)),
        num_shared_experts=shared,
        shared_intermediate_size=shared * width,
        router_score_bias=True,
    )
    return replace(arch, moe=moe, mtp_layers=int(c.get("num_nextn_predict_layers", 0)))


def _read_minimax_m2(c: Config) -> Arch:
    # transformers MiniMaxM2: full attention in every layer (attn_type_list all 1) with q/k
    # RMSNorm over the whole q and k projections (qk_norm_type "per_layer"), partial rotary
    # (rotary_dim). Every layer is MoE: num_local_experts experts of intermediate_size, a sigmoid
    # router with e_score_correction_bias (use_routing_bias), no shared expert. The MTP modules
    # (num_mtp_modules) are not part of the transformers model and are not counted.
    arch = _llama_like(c, "minimax_m2")
    types = c.get("attn_type_list", [])
    if any(int(t) != 1 for t in types):
        raise ModelFormatError(
            f"{c.origin}: attn_type_list has non-full-attention layers; rigwise reads "
            "minimax_m2 configs whose every layer is full attention (MiniMax-M2).",
            hint="Use MiniMax-M2's config.json (MiniMax-Text-01 lightning attention is not read).",
        )
    moe = MoEArch(
        num_experts=int(c.req("num_local_experts")),
        experts_per_token=int(c.req("num_experts_per_tok")),
        expert_intermediate_size=arch.intermediate_size,
        moe_layers=tuple(range(arch.num_layers)),
        num_shared_experts=0,
        shared_intermediate_size=int(c.get("shared_intermediate_size", 0)),
        router_score_bias=bool(c.get("use_routing_bias", True)),
    )
    return replace(
        arch,
        moe=moe,
        intermediate_size=0,
        qk_norm=bool(c.get("use_qk_norm", True)),
        qk_norm_full=c.get("qk_norm_type", "per_layer") == "per_layer",
    )


def _read_qwen3_next(c: Config) -> Arch:
    # transformers Qwen3Next / Qwen3.5: hybrid layers. Full-attention layers (layer_types, else
    # every full_attention_interval-th) are gated attention: q_proj emits query and an output
    # gate, q/k RMSNorm. The others are gated DeltaNet (linear attention with a fixed-size
    # state). MLPs are qwen2_moe-style MoE (one shared expert with a sigmoid gate) when the
    # config has experts (Qwen3-Next, Qwen3.5 MoE), else dense (Qwen3.5 dense sizes).
    model_type = str(c.req("model_type"))
    arch = replace(_llama_like(c, model_type), qk_norm=True, attn_output_gate=True)
    interval = int(c.get("full_attention_interval", 4))
    types = c.get("layer_types", None) or [
        "full_attention" if (i + 1) % interval == 0 else "linear_attention"
        for i in range(arch.num_layers)
    ]
    linear = LinearAttention(
        layers=tuple(i for i, t in enumerate(types) if t == "linear_attention"),
        num_key_heads=int(c.req("linear_num_key_heads")),
        num_value_heads=int(c.req("linear_num_value_heads")),
        key_head_dim=int(c.req("linear_key_head_dim")),
        value_head_dim=int(c.req("linear_value_head_dim")),
        conv_kernel=int(c.get("linear_conv_kernel_dim", 4)),
        recurrent_value_bytes=4 if c.get("mamba_ssm_dtype", "") == "float32" else 2,
    )
    arch = replace(arch, linear_attention=linear)
    if not c.get("num_experts", 0):
        return arch
    shared = int(c.get("shared_expert_intermediate_size", 0))
    moe = MoEArch(
        num_experts=int(c.req("num_experts")),
        experts_per_token=int(c.req("num_experts_per_tok")),
        expert_intermediate_size=int(c.req("moe_intermediate_size")),
        moe_layers=_qwen_moe_layers(c, arch.num_layers),
        num_shared_experts=1 if shared else 0,
        shared_intermediate_size=shared,
        shared_expert_gate=bool(shared),
    )
    return replace(arch, moe=moe)


def _read_gpt_oss(c: Config) -> Arch:
    arch = replace(_llama_like(c, "gpt_oss"), attention_sinks=True)
    arch = replace(arch, qkv_bias=bool(c.get("attention_bias", True)), o_bias=True)
    moe = MoEArch(
        num_experts=int(c.req("num_local_experts")),
        experts_per_token=int(c.req("num_experts_per_tok", "experts_per_token")),
        expert_intermediate_size=arch.intermediate_size,
        moe_layers=tuple(range(arch.num_layers)),
        router_bias=True,
        expert_bias=True,
    )
    arch = replace(arch, moe=moe, intermediate_size=0)
    return _window(c, arch, default_sliding=(arch.num_layers + 1) // 2)


def _read_llama4(c: Config) -> Arch:
    arch = _llama_like(c, "llama4")
    step = int(c.get("interleave_moe_layer_step", 1))
    layers = c.get("moe_layers", None) or list(range(step - 1, arch.num_layers, step))
    expert_width = int(c.req("intermediate_size"))
    moe = MoEArch(
        num_experts=int(c.req("num_local_experts")),
        experts_per_token=int(c.req("num_experts_per_tok")),
        expert_intermediate_size=expert_width,
        moe_layers=tuple(int(i) for i in layers),
        num_shared_experts=1,
        shared_intermediate_size=expert_width,
    )
    dense_width = int(c.get("intermediate_size_mlp", expert_width))
    arch = replace(arch, moe=moe, intermediate_size=dense_width)
    # RoPE layers use chunked local attention (attention_chunk_size); every 4th layer is global.
    chunk = c.get("attention_chunk_size", None)
    interval = int(c.get("no_rope_layer_interval", 4))
    rope_layers = c.get("no_rope_layers", None) or [
        int((i + 1) % interval != 0) for i in range(arch.num_layers)
    ]
    if chunk:
        local = sum(1 for flag in rope_layers if flag)
        arch = replace(arch, sliding_window=int(chunk), sliding_window_layers=local)
    return arch


_LLAMA_FAMILY: dict[str, Callable[[Config], Arch]] = {
    "llama": _read_llama,
    "mistral": _read_mistral,
    "mixtral": _read_mixtral,
    "qwen2": _read_qwen2,
    "qwen2_moe": _read_qwen2_moe,
    "qwen3": _read_qwen3,
    "qwen3_moe": _read_qwen3_moe,
    "gemma": _read_gemma,
    "gemma2": _read_gemma2,
    "gemma3": _read_gemma3,
    "gemma3_text": _read_gemma3,
    "phi3": _read_phi3,
    "deepseek_v2": _read_deepseek,
    "deepseek_v3": _read_deepseek,
    "kimi_k2": _read_deepseek,  # Kimi K2 uses DeepseekV3ForCausalLM with its own model_type
    "glm4_moe": _read_glm4_moe,
    "minimax_m2": _read_minimax_m2,
    "qwen3_next": _read_qwen3_next,
    "qwen3_5": _read_qwen3_next,
    "qwen3_5_text": _read_qwen3_next,
    "qwen3_5_moe": _read_qwen3_next,
    "qwen3_5_moe_text": _read_qwen3_next,
    "gpt_oss": _read_gpt_oss,
    "llama4": _read_llama4,
    "llama4_text": _read_llama4,
}


@functools.cache
def readers() -> dict[str, Callable[[Config], Arch]]:
    """Every supported model_type; GPT-style families live in arch_gpt.py."""
    return {**_LLAMA_FAMILY, **GPT_FAMILY}


_NESTED_TEXT = ("gemma3", "llama4", "mistral3", "llava", "qwen3_5", "qwen3_5_moe")
_LLAMA_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")


def read_arch(config: Mapping[str, Any], origin: str) -> Arch:
    """The normalized architecture of an HF config dict (``origin`` names it in errors)."""
    model_type = str(config.get("model_type", ""))
    if model_type in _NESTED_TEXT and isinstance(config.get("text_config"), Mapping):
        # Multimodal configs nest the language model; rigwise counts the text part only.
        text = {**config["text_config"]}
        text.setdefault("tie_word_embeddings", config.get("tie_word_embeddings"))
        if text.get("tie_word_embeddings") is None:
            text.pop("tie_word_embeddings")
        arch = read_arch({**text, "model_type": model_type}, origin)
        vision = vision_params(config, arch.hidden_size)
        note = "text model only: the vision tower is not in params_total"
        return replace(arch, vision_params=vision, notes=(*arch.notes, note))
    reader = readers().get(model_type)
    if reader is not None:
        return reader(Config(config, origin))
    if all(key in config for key in _LLAMA_KEYS) and "vocab_size" in config:
        arch = _llama_like(Config(config, origin), model_type or "unknown")
        note = f"model_type {model_type!r} is not supported; read as llama-like (approximate)"
        return replace(arch, notes=(note,))
    raise ModelFormatError(
        f"{origin}: model_type {model_type!r} is not supported.",
        hint=f"Supported: {', '.join(sorted(readers()))}.",
    )


__all__ = ["Arch", "Config", "MoEArch", "read_arch", "readers"]
