"""Bounds on what a model file may say, checked where it is read (HF config.json, GGUF metadata)
and on the ``ModelSpec`` built from it, so that a malformed file is a ``ModelFormatError`` naming
the key and the value, never a ZeroDivisionError, a negative parameter count or 10^18 layers.

The upper bounds are far above any published model (the largest have ~160 layers, hidden 2^15,
~10^3 experts, 256k vocabularies and 10^7-token contexts) and keep the arithmetic bounded.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from rigwise.errors import ModelFormatError, shown_value
from rigwise.models.spec import ModelSpec

MAX_LAYERS = 100_000
MAX_WIDTH = 1 << 22  # hidden, intermediate, head_dim, ranks
MAX_HEADS = 1 << 16
MAX_VOCAB = 1 << 24
MAX_CONTEXT = 100_000_000
MAX_EXPERTS = 1 << 16
MAX_PARAMS = 1e16  # 10^16 weights: ~10^4 times the largest published model

# keys (space-separated) -> (lowest, highest) accepted; keys absent from a file are not checked.
_LIMIT_GROUPS: tuple[tuple[str, int, int], ...] = (
    ("num_hidden_layers n_layer n_layers num_layers", 1, MAX_LAYERS),
    ("hidden_size n_embd d_model", 1, MAX_WIDTH),
    (
        "intermediate_size n_inner ffn_hidden_size moe_intermediate_size "
        "shared_expert_intermediate_size intermediate_size_mlp kv_lora_rank q_lora_rank "
        "qk_nope_head_dim qk_rope_head_dim v_head_dim head_dim patch_size image_size",
        0,
        MAX_WIDTH,
    ),
    ("num_attention_heads n_head n_heads num_key_value_heads num_kv_heads", 1, MAX_HEADS),
    ("vocab_size", 1, MAX_VOCAB),
    (
        "max_position_embeddings n_positions max_seq_len sliding_window attention_chunk_size",
        0,
        MAX_CONTEXT,
    ),
    (
        "num_experts num_local_experts n_routed_experts n_shared_experts num_experts_per_tok "
        "num_nextn_predict_layers first_k_dense_replace moe_layer_freq decoder_sparse_step "
        "interleave_moe_layer_step max_window_layers no_rope_layer_interval "
        "sliding_window_pattern expansion_ratio num_ln_in_parallel_attn num_channels",
        0,
        MAX_LAYERS,
    ),
)
_LIMITS = {key: (low, high) for keys, low, high in _LIMIT_GROUPS for key in keys.split()}
_FLAG_OR_SIZE = frozenset({"sliding_window"})  # some configs write false for "none"
_REAL = frozenset({"expansion_ratio"})
_NESTED = ("text_config", "vision_config", "attn_config")


def check_config(config: Mapping[str, Any], origin: str) -> None:
    """Every known size key of an HF config (and its nested text/vision/attention configs) is an
    integer within bounds; ModelFormatError naming the key and the value otherwise."""
    _check_mapping(config, origin, "")
    for nested in _NESTED:
        inner = config.get(nested)
        if isinstance(inner, Mapping):
            _check_mapping(inner, origin, f"{nested}.")
        elif inner is not None and not isinstance(inner, Mapping):
            raise _bad(origin, nested, inner, "must be an object")


def _check_mapping(config: Mapping[str, Any], origin: str, prefix: str) -> None:
    for key, (low, high) in _LIMITS.items():
        value = config.get(key)
        if value is None or (key in _FLAG_OR_SIZE and isinstance(value, bool)):
            continue
        if key in _REAL and isinstance(value, float) and math.isfinite(value):
            value = math.ceil(value)  # MPT's expansion_ratio may be fractional
        config_int(value, f"{prefix}{key}", origin, low, high)
    for key in ("layer_types", "moe_layers", "mlp_only_layers", "no_rope_layers"):
        value = config.get(key)
        if value is not None and not isinstance(value, list | int):
            raise _bad(origin, f"{prefix}{key}", value, "must be a list")
        if isinstance(value, list) and len(value) > MAX_LAYERS:
            raise _bad(origin, f"{prefix}{key}", f"<{len(value)} items>", "is too long")


def config_int(value: Any, key: str, origin: str, low: int, high: int) -> int:
    """``value`` as an int in [low, high]: ints, and floats with an integer value (some configs
    write 4096.0); never bools, strings, lists, NaN or infinities."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _bad(origin, key, value, "must be a whole number")
    if isinstance(value, float) and (not math.isfinite(value) or not value.is_integer()):
        raise _bad(origin, key, value, "must be a finite whole number")
    if not low <= value <= high:
        raise _bad(origin, key, value, f"must be between {low:,} and {high:,}")
    return int(value)


def _bad(origin: str, key: str, value: Any, rule: str) -> ModelFormatError:
    return ModelFormatError(
        f"{origin}: key {key!r} = {shown_value(value)} {rule}.",
        hint="Use the model's config.json (or GGUF) as published; the value is not plausible.",
    )


def check_spec(spec: ModelSpec, origin: str) -> ModelSpec:
    """A spec read from a file is plausible: positive sizes, bounded layers and counts, active
    parameters within the total; ModelFormatError naming the field otherwise."""
    bounds = {
        "num_layers": (1, MAX_LAYERS),
        "hidden_size": (1, MAX_WIDTH),
        "intermediate_size": (0, MAX_WIDTH),
        "num_attention_heads": (1, MAX_HEADS),
        "num_kv_heads": (1, MAX_HEADS),
        "head_dim": (1, MAX_WIDTH),
        "vocab_size": (0, MAX_VOCAB),
        "max_context": (0, MAX_CONTEXT),
    }
    for name, (low, high) in bounds.items():
        config_int(getattr(spec, name), name, origin, low, high)
    if spec.num_attention_heads % spec.num_kv_heads:  # each KV head serves a group of heads
        raise _bad(
            origin,
            "num_kv_heads",
            spec.num_kv_heads,
            f"does not divide num_attention_heads = {spec.num_attention_heads}",
        )
    if spec.moe is not None:  # before the parameter counts: top-k > experts inflates active
        config_int(spec.moe.num_experts, "num_experts", origin, 1, MAX_EXPERTS)
        config_int(spec.moe.experts_per_token, "experts_per_token", origin, 0, spec.moe.num_experts)
        config_int(spec.moe.expert_intermediate_size, "expert_intermediate_size", origin, 0,
                   MAX_WIDTH)  # fmt: skip
    for name in ("params_total", "params_active", "params_embedding", "params_lm_head"):
        value = getattr(spec, name)
        if not 0 <= value <= MAX_PARAMS:
            raise _bad(origin, name, value, "is not a plausible parameter count")
    if spec.params_total <= 0 or spec.params_active > spec.params_total:
        raise _bad(origin, "params_active", spec.params_active, "is not within params_total")
    return spec
