"""Replicas, expert parallel + attention data parallel, and disaggregated prefill/decode on the
packaged catalog, against the formulas they cite."""

from __future__ import annotations

import pytest

from rigwise.api.infer import plan_inference
from rigwise.api.train import plan_training
from rigwise.errors import InputError
from rigwise.estimate import comms
from rigwise.estimate.inference_memory import expert_weight_share
from rigwise.estimate.serving_layout import check_expert_parallel
from rigwise.hardware import get_link
from rigwise.models import load_model

DEEPSEEK = dict(
    model="deepseek-v3", on="dgx-h200", nodes=2, network="ib-ndr", quant="FP8",
    prompt=4000, gen=1000, levers=False,
)  # fmt: skip


def test_mla_latent_cache_is_not_replicated_across_attention_dp_ranks() -> None:
    """MLA keeps one latent head per layer, (kv_lora_rank + rope dim) x layers x 2 bytes per
    token (DeepSeek-V2 Sec. 2.1): tensor parallel copies it onto every device, attention DP
    gives each rank its own requests, so 16 ranks hold 16x the requests."""
    spec = load_model("deepseek-v3")
    assert spec.kv_cache_bytes(1, "bf16") == (512 + 64) * 61 * 2
    base = dict(DEEPSEEK, tp=16, max_batch=100_000, concurrency="max")
    tp_only = plan_inference(**base).serving
    dp_attention = plan_inference(**base, attention_dp=16, ep=16).serving
    assert tp_only is not None and dp_attention is not None
    assert 12 * tp_only.running_batch < dp_attention.running_batch


def test_attention_dp_copies_the_dense_weights_and_shards_the_experts() -> None:
    spec = load_model("deepseek-v3")
    plan = plan_inference(**DEEPSEEK, tp=16, ep=16, attention_dp=16)
    weights = spec.weights_bytes("FP8")
    experts = weights * expert_weight_share(spec)
    expected = (weights - experts) + experts / 16
    assert plan.memory.per_device[0].weights_bytes == pytest.approx(expected)
    tp = plan_inference(**DEEPSEEK, tp=16)
    assert tp.memory.per_device[0].weights_bytes == pytest.approx(weights / 16)


def test_moe_on_four_nodes_with_ep_and_attention_dp_plans() -> None:
    plan = plan_inference(
        **{**DEEPSEEK, "nodes": 4, "quant": "BF16"}, tp=32, ep=32, attention_dp=32, concurrency=2048
    )
    assert plan.fits and plan.serving is not None
    assert plan.serving.gpus == 32 and plan.serving.running_batch > 0


def test_expert_all_to_all_is_part_of_the_decode_step() -> None:
    """Dispatch + combine move each token's hidden state to its k=8 experts' ranks and back
    (DeepSeek-V3 report Sec. 3.4): per MoE layer 2 all-to-alls of batch/16 x hidden x k x 2 B
    per device. Over a slower network the step grows by exactly that difference."""
    spec = load_model("deepseek-v3")
    assert spec.moe is not None
    layout = dict(tp=16, ep=16, attention_dp=16, concurrency=128)
    fast = plan_inference(**DEEPSEEK, **layout).serving
    slow = plan_inference(**{**DEEPSEEK, "network": "100gbe"}, **layout).serving
    assert fast is not None and slow is not None
    per_device = 128 / 16 * spec.hidden_size * 2 * spec.moe.experts_per_token

    def exchange(link_id: str) -> float:
        return 2 * comms.all_to_all(per_device, 16, get_link(link_id)).seconds

    expected = spec.moe.num_moe_layers * (exchange("100gbe") - exchange("ib-ndr"))
    assert slow.step_seconds - fast.step_seconds == pytest.approx(expected, rel=1e-6)


def test_replicas_double_the_total_at_the_same_rate_per_gpu() -> None:
    base = dict(model="llama-3.1-8b", on="8x h100-sxm", quant="FP8", prompt=1000, gen=500)
    one = plan_inference(**base, tp=1, pp=1, concurrency=200, levers=False).serving
    two = plan_inference(**base, tp=1, pp=1, dp=2, concurrency=400, levers=False).serving
    assert one is not None and two is not None
    assert two.aggregate_tokens_per_s == pytest.approx(2 * one.aggregate_tokens_per_s)
    assert two.tokens_per_s_per_gpu == pytest.approx(one.tokens_per_s_per_gpu)
    with pytest.raises(InputError, match="--dp 9"):
        plan_inference(**base, tp=1, dp=9, levers=False)


def test_disaggregated_kv_transfer_is_the_prompt_cache_over_the_link() -> None:
    """Prefill on node 0, decode on node 1: the prompt's KV cache crosses InfiniBand, each of
    the 8 device pairs moving its share: latency + bytes / (8 x bandwidth)."""
    plan = plan_inference(
        **DEEPSEEK,
        concurrency=256,
        disagg={"prefill": {"tp": 8}, "decode": {"tp": 8, "ep": 8, "attention_dp": 8}},
    )
    assert plan.fits and plan.serving is not None
    link = get_link("ib-ndr")
    kv = load_model("deepseek-v3").kv_cache_bytes(4000, "bf16")
    expected = link.latency_s + kv / 8 / link.bandwidth_bytes_per_s
    assert plan.serving.kv_transfer_s == pytest.approx(expected)
    assert plan.serving.mode == "disaggregated" and plan.serving.gpus == 16
    assert plan.serving.tpot_s == pytest.approx(plan.serving.step_seconds)  # no prefill mixed in


def test_disaggregated_pools_must_fit_the_cluster() -> None:
    with pytest.raises(InputError, match="decode devices"):
        plan_inference(**DEEPSEEK, disagg={"prefill": {"tp": 8, "workers": 2}, "decode": {"tp": 8}})
    with pytest.raises(InputError, match="unknown key"):
        plan_inference(**DEEPSEEK, disagg={"prefill": {"tq": 8}, "decode": {"tp": 8}})


def test_expert_parallel_needs_experts() -> None:
    check_expert_parallel(load_model("qwen3-30b-a3b"), 8)  # routed experts to shard: fine
    check_expert_parallel(load_model("llama-3.1-8b"), 1)  # no expert parallel asked: fine
    with pytest.raises(InputError, match=r"llama-3\.1-8b is a dense model") as caught:
        check_expert_parallel(load_model("llama-3.1-8b"), 4)
    assert caught.value.hint == "Drop --ep, or use --tp 4 to split the model over 4 devices."


def test_expert_parallel_hint_holds_the_split_to_the_devices_there_are() -> None:
    """`--ep 8` on a dense model on 2 devices suggested `--tp 8`, which the rig cannot run."""
    dense = load_model("llama-3.1-8b")
    with pytest.raises(InputError) as caught:
        check_expert_parallel(dense, 8, devices=2)
    assert caught.value.hint == "Drop --ep, or use --tp 2 to split the model over 2 devices."
    with pytest.raises(InputError) as caught:
        check_expert_parallel(dense, 8, devices=1)
    assert caught.value.hint == "Drop --ep; one device holds the whole model."
    with pytest.raises(InputError) as caught:
        check_expert_parallel(dense, 4, devices=8)
    assert caught.value.hint == "Drop --ep, or use --tp 4 to split the model over 4 devices."
    # 3 devices: --tp 3 does not divide llama-3.1-8b's 32 heads (engine rule), --tp 2 does
    with pytest.raises(InputError) as caught:
        check_expert_parallel(dense, 8, devices=3)
    assert caught.value.hint == "Drop --ep, or use --tp 2 to split the model over 2 devices."
    # 7 devices: --tp 7 divides qwen2.5-7b's 28 heads but not its 4 KV heads, nor they it
    # (engine rule tp-kv-heads: vLLM plans 'does not fit'); --tp 4 splits both
    with pytest.raises(InputError) as caught:
        check_expert_parallel(load_model("qwen2.5-7b"), 8, devices=7)
    assert caught.value.hint == "Drop --ep, or use --tp 4 to split the model over 4 devices."


@pytest.mark.parametrize(
    ("on", "hint"),
    [
        ("3x h100-sxm", "Drop --ep."),  # --tp 2 and --tp 4 divide no 3-device node; 3 no heads
        ("6x h100-sxm", "Drop --ep, or use --tp 2 to split the model over 2 devices."),
        ("h100-sxm", "Drop --ep; one device holds the whole model."),
    ],
)
def test_an_inference_ep_hint_names_a_tp_the_rig_and_engine_take(on: str, hint: str) -> None:
    """On 3 devices the hint said --tp 2, which infer refuses: '--tp 2 does not divide node 0's
    3 devices'; qwen2.5-7b on 7 said --tp 4, the same. The --tp named plans."""
    with pytest.raises(InputError) as caught:
        plan_inference(model="qwen2.5-7b", on=on, engine="vllm", ep=8, levers=False)
    assert caught.value.hint == hint
    if "--tp" in hint:
        tp = int(hint.split("--tp ")[1].split()[0])
        assert plan_inference(model="qwen2.5-7b", on=on, engine="vllm", tp=tp, levers=False).fits


def test_infer_and_train_name_the_rigs_device_count_in_the_dense_ep_hint() -> None:
    with pytest.raises(InputError) as caught:
        plan_inference(model="llama-3.1-8b", on="2x rtx-4090", engine="vllm", ep=8)
    assert "--tp 2 " in caught.value.hint
    with pytest.raises(InputError) as caught:
        plan_training(model="llama-3.1-8b", on="4x h100-sxm", ep=8)
    assert "--tp 4 " in caught.value.hint
