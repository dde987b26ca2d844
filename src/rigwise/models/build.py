"""Arch + exact counts -> ModelSpec."""

from __future__ import annotations

from rigwise.models.arch import Arch
from rigwise.models.params import count_params
from rigwise.models.spec import ModelSpec, MoESpec


def spec_from_arch(arch: Arch, name: str, source: str, notes: tuple[str, ...] = ()) -> ModelSpec:
    counts = count_params(arch)
    linear = arch.linear_attention
    moe = None
    if arch.moe is not None:
        moe = MoESpec(
            num_experts=arch.moe.num_experts,
            experts_per_token=arch.moe.experts_per_token,
            expert_intermediate_size=arch.moe.expert_intermediate_size,
            num_shared_experts=arch.moe.num_shared_experts,
            shared_intermediate_size=arch.moe.shared_intermediate_size,
            num_moe_layers=len(arch.moe.moe_layers),
            params_per_expert=counts.per_expert,
        )
    return ModelSpec(
        name=name,
        architecture=arch.model_type,
        num_layers=arch.num_layers,
        hidden_size=arch.hidden_size,
        intermediate_size=arch.intermediate_size,
        num_attention_heads=arch.num_attention_heads,
        num_kv_heads=arch.num_kv_heads,
        head_dim=arch.head_dim,
        vocab_size=arch.vocab_size,
        tie_word_embeddings=arch.tie_word_embeddings,
        max_context=arch.max_context,
        params_total=counts.total,
        params_active=counts.active,
        params_embedding=counts.embedding,
        moe=moe,
        mla=arch.mla,
        sliding_window=arch.sliding_window,
        sliding_window_layers=arch.sliding_window_layers,
        gated_mlp=arch.gated_mlp,
        source=source,
        params_lm_head=counts.lm_head,
        params_positions=counts.positions,
        params_vectors=counts.vectors,
        params_vectors_active=counts.vectors_active,
        params_mtp=counts.mtp,
        params_vision=arch.vision_params,
        params_breakdown=counts.parts,
        linear_attention_layers=0 if linear is None else len(linear.layers),
        linear_state_bytes=0.0 if linear is None else float(linear.state_bytes()),
        notes=(*arch.notes, *notes),
    )
