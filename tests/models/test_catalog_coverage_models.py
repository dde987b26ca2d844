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
