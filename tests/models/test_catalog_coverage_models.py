"""Issue 13 item 4: the models people serve today are in the catalog, their parameter counts
(computed from the stored config.json) match the published figures within 1 %, and every catalog
model plans on at least one catalog device."""

from __future__ import annotations

import pytest

from rigwise.api.infer import plan_inference
from rigwise.models import load_model
from rigwise.models.catalog import catalog_entries

B = 1e9

# name -> (published total, published active or None, where it is published). Repeated from the
# JSON files' params_published so that a silently edited data file fails here too.
PUBLISHED = {
    "kimi-k2": (1026.5 * B, 32 * B, "Kimi-K2-Instruct hub count 1026.5B (incl. FP8 scales); 32B"),
    "deepseek-v3.1": (671 * B, 37 * B, "DeepSeek-V3.1 model card: 671B total, 37B activated"),
    "glm-4.5": (355 * B, 32 * B, "GLM-4.5 model card: 355B total, 32B active"),
    "glm-4.6": (355 * B, 32 * B, "GLM-4.6: GLM-4.5 architecture, 355B / 32B"),
    "minimax-m2": (230 * B, 10 * B, "MiniMax-M2 model card: 230B total, 10B active"),
    "qwen3-coder-480b-a35b": (480 * B, 35 * B, "Qwen3-Coder-480B-A35B card: 480B, 35B active"),
    "qwen3-coder-30b-a3b": (30.5 * B, 3.3 * B, "Qwen3-Coder-30B-A3B card: 30.5B, 3.3B active"),
    "gemma-2b": (2.506 * B, None, "Gemma report arXiv:2403.08295 Table 2"),
    "gemma-7b": (8.538 * B, None, "Gemma report arXiv:2403.08295 Table 2"),
    "phi-2": (2.78 * B, None, "microsoft/phi-2 hub count 2.78B (card: 2.7 billion)"),
    "falcon-40b": (41.8 * B, None, "tiiuae/falcon-40b hub count 41.8B (head stored separately)"),
    "mistral-7b-v0.2": (7.24 * B, None, "Mistral-7B-Instruct-v0.2 hub count 7.24B"),
    "qwen3-next-80b-a3b": (79.674391296 * B, None, "Qwen3-Next / Qwen3-Coder-Next checkpoint"),
    "qwen3.5-9b": (9 * B, None, "Qwen3.5-9B: 9B language model (checkpoint 9.65B incl. vision)"),
}


def _comparable_total(name: str) -> int:
    spec = load_model(name)
    total = spec.params_total
    if catalog_entries()[name].params_published.get("stored_tied_head"):
        total += spec.vocab_size * spec.hidden_size
    return total


def _comparable_active(name: str) -> int:
    spec = load_model(name)
    published = catalog_entries()[name].params_published
    active = spec.params_active
    if published.get("active_excludes_embedding"):
        active -= spec.params_embedding
    if published.get("active_excludes_head"):
        active -= spec.params_lm_head
    return active


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_new_model_total_is_within_one_percent_of_the_published_figure(name: str) -> None:
    published, _, where = PUBLISHED[name]
    data = catalog_entries()[name].params_published
    assert data["total"] == pytest.approx(published, rel=1e-3), where
    assert abs(_comparable_total(name) - published) <= 0.01 * published, where


@pytest.mark.parametrize("name", sorted(n for n, p in PUBLISHED.items() if p[1] is not None))
def test_new_moe_model_active_is_within_three_percent_of_the_published_figure(name: str) -> None:
    # Active figures are printed with two significant digits (32B, 10B): 3 % is the rounding.
    _, active, where = PUBLISHED[name]
    assert active is not None
    assert abs(_comparable_active(name) - active) <= 0.03 * active, where


def test_gemma_non_embedding_counts_match_the_report_to_the_parameter() -> None:
    # arXiv:2403.08295 Table 2; the report's embedding has 256,128 rows, the configs 256,000.
    for name, non_embedding in (("gemma-2b", 1_981_884_416), ("gemma-7b", 7_751_248_896)):
        spec = load_model(name)
        assert spec.params_total - spec.params_embedding == non_embedding


def test_kimi_k2_is_deepseek_v3_with_more_experts_and_fewer_heads() -> None:
    kimi, v3 = load_model("kimi-k2"), load_model("deepseek-v3")
    assert kimi.architecture == "kimi_k2" and kimi.mla == v3.mla
    assert kimi.moe is not None and v3.moe is not None
    assert (kimi.moe.num_experts, v3.moe.num_experts) == (384, 256)
    assert (kimi.num_attention_heads, v3.num_attention_heads) == (64, 128)
    assert kimi.params_mtp == 0 < v3.params_mtp  # Kimi K2 ships no MTP layer


def test_glm_moe_counts_its_mtp_layer_outside_the_total() -> None:
    # GLM-4.5 report: 3 dense + 89 MoE layers, 1 MTP layer; the hub's 358B = 355B + MTP.
    spec = load_model("glm-4.5")
    assert spec.moe is not None and spec.moe.num_moe_layers == 89
    assert spec.moe.num_shared_experts == 1 and spec.moe.shared_intermediate_size == 1536
    assert 5e9 < spec.params_mtp < 6e9
    assert round((spec.params_total + spec.params_mtp) / B) == 358


def test_minimax_m2_has_full_attention_in_every_layer() -> None:
    # attn_type_list is all 1 (full attention): the KV cache grows in all 62 layers.
    spec = load_model("minimax-m2")
    assert spec.sliding_window is None and spec.sliding_window_layers == 0
    per_token = spec.kv_cache_bytes_per_token("bf16")
    assert per_token == 62 * 2 * 8 * 128 * 2


def test_phi2_counts_the_output_head_bias_as_a_vector() -> None:
    spec = load_model("phi-2")
    assert spec.params_lm_head == spec.vocab_size * spec.hidden_size
    assert dict(spec.params_breakdown)["lm_head"] == spec.params_lm_head + spec.vocab_size


def test_falcon_40b_uses_eight_kv_groups() -> None:
    spec = load_model("falcon-40b")
    assert (spec.num_attention_heads, spec.num_kv_heads, spec.head_dim) == (128, 8, 64)


# Smallest first: each catalog model is planned on the first of these it fits on.
LADDER = ["rtx-4090", "h100-sxm", "8x h200-sxm", "8x b300"]


@pytest.mark.parametrize("name", sorted(catalog_entries()))
def test_every_catalog_model_plans_on_a_catalog_device(name: str) -> None:
    for device in LADDER:
        plan = plan_inference(model=name, on=device, levers=False)
        if plan.fits:
            assert plan.decode is not None and plan.decode.tokens_per_s > 0
            return
    pytest.fail(f"{name} fits on none of {LADDER}")


# --- hybrid linear attention (Qwen3-Next, Qwen3.5) ------------------------------------------


def test_qwen3_next_counts_match_the_checkpoint_to_the_parameter() -> None:
    # Qwen3-Coder-Next (the Qwen3-Next-80B-A3B config) safetensors: 79,674,391,296 in total,
    # 3,874,929,408 without the idle experts' tensors (both ends of the model included).
    spec = load_model("qwen3-next-80b-a3b")
    assert spec.params_total == 79_674_391_296
    assert spec.params_active == 3_874_929_408


def test_gated_deltanet_layers_keep_a_fixed_state_instead_of_a_kv_cache() -> None:
    spec = load_model("qwen3.5-9b")
    # 24 linear-attention layers, 8 full-attention ones (3:1): only the 8 cache K and V.
    assert spec.linear_attention_layers == 24
    assert spec.kv_cache_bytes_per_token("bf16") == 8 * 2 * 4 * 256 * 2
    # Per linear layer: fp32 recurrent state 32 v-heads x 128 x 128, plus the bf16 conv window
    # (2 x 16 x 128 + 32 x 128 channels x 3 taps): 51,511,296 bytes over 24 layers.
    assert spec.linear_state_bytes == 24 * (32 * 128 * 128 * 4 + (2 * 16 * 128 + 32 * 128) * 3 * 2)
    grows = spec.kv_cache_bytes(2048, "bf16") - spec.kv_cache_bytes(1024, "bf16")
    assert grows == 1024 * spec.kv_cache_bytes_per_token("bf16")
    assert spec.kv_cache_bytes(1, "bf16") > spec.linear_state_bytes


def _qwen35_9b_mtp_params() -> int:
    # One MTP depth: fc (2h -> h), two pre-fc RMSNorms, one gated full-attention decoder layer
    # with the dense MLP, and its output norm (h 4096, 16 x 256 q heads + gate, 4 x 256 kv).
    h, q, kv, ffn = 4096, 16 * 256, 4 * 256, 12288
    layer = h * 2 * q + 2 * h * kv + q * h + 2 * 256 + 3 * h * ffn + 2 * h
    return 2 * h * h + 2 * h + layer + h


def _qwen35_9b_vision_params() -> int:
    # Qwen3-VL vision tower: Conv3d patch embedding (3 x 2 x 16 x 16, bias), learned positions,
    # 27 pre-LN blocks (biased qkv/proj, 2-matrix MLP), and the patch merger (LayerNorm, then
    # 4 x 1152 -> 4608 -> 4096 with biases).
    d, ffn, merged = 1152, 4304, 4 * 1152
    embed = 3 * 2 * 16 * 16 * d + d + 2304 * d
    block = 4 * d + (d * 3 * d + 3 * d) + (d * d + d) + (d * ffn + ffn) + (ffn * d + d)
    merger = 2 * d + (merged * merged + merged) + (merged * 4096 + 4096)
    return embed + 27 * block + merger


def test_qwen35_9b_text_count_rebuilds_the_checkpoint_total() -> None:
    # model.safetensors.index.json total_size 19,306,216,416 bytes, all bf16 but a few fp32
    # vectors: 9,653,108,208 parameters = language model + MTP layer + vision tower.
    checkpoint = 19_306_216_416 // 2
    text = load_model("qwen3.5-9b").params_total
    rebuilt = text + _qwen35_9b_mtp_params() + _qwen35_9b_vision_params()
    assert abs(rebuilt - checkpoint) <= 1e-5 * checkpoint


def test_kimi_k2_hub_count_is_the_model_plus_its_fp8_block_scales() -> None:
    # The hub's 1026.5B counts the checkpoint's tensors: every FP8 linear weight carries one fp32
    # scale per 128 x 128 block (quantization_config weight_block_size); the router, norms,
    # embedding and head are not quantized.
    spec = load_model("kimi-k2")
    assert spec.mla is not None and spec.moe is not None

    def blocks(rows: int, cols: int) -> int:
        return -(-rows // 128) * -(-cols // 128)

    h, heads, m = spec.hidden_size, spec.num_attention_heads, spec.mla
    assert m.q_lora_rank is not None
    rope, nope = m.qk_rope_head_dim, m.qk_nope_head_dim
    attention = (
        blocks(m.q_lora_rank, h)
        + blocks(heads * (nope + rope), m.q_lora_rank)
        + blocks(m.kv_lora_rank + rope, h)
        + blocks(heads * (nope + m.v_head_dim), m.kv_lora_rank)
        + blocks(h, heads * m.v_head_dim)
    )
    width = spec.moe.expert_intermediate_size
    expert = 2 * blocks(width, h) + blocks(h, width)
    moe_layers = spec.moe.num_moe_layers
    dense_layers = spec.num_layers - moe_layers
    scales = spec.num_layers * attention + dense_layers * 3 * blocks(spec.intermediate_size, h)
    scales += moe_layers * (spec.moe.num_experts + spec.moe.num_shared_experts) * expert
    assert round((spec.params_total + scales) / 1e8) == 10265  # 1026.5B
