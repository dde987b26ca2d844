"""vLLM's memory accounting (``inference_memory.workspace_bytes``) and AWQ checkpoint sizes.

Expected values come from the formulas in ``engine_overheads.csv`` (vLLM's profile run: logits at
the last token of min(max_num_seqs, max_num_batched_tokens) sequences, 14 B per vocabulary entry
through the sampler) and from published checkpoint sizes, not from any validation row.
"""

from __future__ import annotations

import pytest

from rigwise.api._lookup import cached_model
from rigwise.api.infer import plan_inference
from rigwise.estimate.engine_overheads import device_class, engine_overheads
from rigwise.estimate.inference_memory import workspace_bytes
from rigwise.estimate.serving import resident_kv_tokens
from rigwise.hardware import get_accelerator
from rigwise.plans import DOES_NOT_FIT

GB = 1e9
HIDDEN_BUFFERS_BYTES = 4 * 4  # four fp32 hidden-state buffers per token of a step


def _workspace(model: str, gpu: str, engine: str) -> float:
    accelerator = get_accelerator(gpu)
    overheads = engine_overheads(engine, device_class(accelerator))
    return workspace_bytes(cached_model(model), accelerator, overheads)


def test_vllm_profiles_one_step_of_2048_tokens_and_256_logit_rows_below_70_gib() -> None:
    # engine_defaults.csv: below 70 GiB vLLM's API server takes max_num_batched_tokens 2048 and
    # max_num_seqs 256; Qwen3-30B-A3B: hidden 2048, vocabulary 151,936 (its config.json).
    expected = 2048 * HIDDEN_BUFFERS_BYTES * 2048 + 256 * 151_936 * 14
    assert _workspace("qwen3-coder-30b-a3b", "rtx-4090", "vllm") == pytest.approx(expected)


def test_vllm_profiles_8192_tokens_and_1024_logit_rows_from_70_gib() -> None:
    # engine_defaults.csv: from 70 GiB (not an A100), 8192 tokens and 1024 sequences.
    expected = 8192 * HIDDEN_BUFFERS_BYTES * 2048 + 1024 * 151_936 * 14
    assert _workspace("qwen3-coder-30b-a3b", "h100-sxm", "vllm") == pytest.approx(expected)


def test_llama_cpp_keeps_fp32_logits_for_every_token_of_its_micro_batch() -> None:
    # n_ubatch 512 x (vocab + 4 x hidden) x 4 B (engine_overheads.csv llama.cpp row), unchanged.
    expected = 512 * (151_936 + 4 * 2048) * 4
    assert _workspace("qwen3-coder-30b-a3b", "rtx-4090", "llama.cpp") == pytest.approx(expected)


def test_awq_llama_70b_weighs_what_its_safetensors_files_weigh() -> None:
    # hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4 (same shapes as Llama-3.3-70B; AutoAWQ
    # GEMM, 4 bits, group 128, embeddings and lm_head fp16), huggingface.co tree at commits
    # fbbe33c / db9578a: 4.97 + 6 x 4.89 + 3.36 + 2.1 (the fp16 lm_head) = 39.77 GB.
    published = (4.97 + 6 * 4.89 + 3.36 + 2.1) * GB
    weights = cached_model("llama-3.3-70b").weights_bytes("AWQ-4bit-g128")
    assert weights == pytest.approx(published, rel=0.01)


def test_awq_llama_70b_on_two_24_gb_cards_leaves_room_for_a_kv_cache() -> None:
    # vLLM --pipeline-parallel-size 2 on two 24 GiB cards: a stage holds 40 layers and either the
    # embeddings or the lm_head (equal sizes), half of 39.77 GB; plus the profile run (2048 x 16 B
    # x 8192 hidden + 256 x 128,256 x 14 B) and 0.5 GB beside it, inside 0.9 x 24 GiB.
    stage = (4.97 + 6 * 4.89 + 3.36 + 2.1) * GB / 2
    profile = 2048 * HIDDEN_BUFFERS_BYTES * 8192 + 256 * 128_256 * 14 + 0.5 * GB
    room = 0.9 * 24 * 2**30 - stage - profile
    plan = plan_inference(
        model="llama-3.3-70b",
        on="2x rtx-4090",
        engine="vllm",
        quant="AWQ-4bit-g128",
        kv_quant="fp8",
        tp=1,
        pp=2,
        prompt=1000,
        gen=1000,
        levers=False,
    )
    assert plan.verdict != DOES_NOT_FIT
    free = [
        d.capacity_bytes - d.weights_bytes - d.activations_bytes - d.overhead_bytes
        for d in plan.memory.per_device
    ]
    assert min(free) == pytest.approx(room, rel=0.02)


def test_a_paged_engine_holds_half_the_output_on_average_a_reserving_one_all_of_it() -> None:
    # engine_overheads.csv kv_reservation: vLLM allocates KV blocks as a sequence grows (Kwon et
    # al. 2023, PagedAttention), so over a decode of 1000 tokens after a 1000-token prompt a
    # request holds 1000 + 1000 / 2; TensorRT-LLM's GUARANTEED_NO_EVICT reserves all 2000.
    vllm = engine_overheads("vllm", "nvidia-gddr")
    trt = engine_overheads("tensorrt-llm", "nvidia-hbm")
    assert resident_kv_tokens(vllm, 1000, 1000, 8192) == 1500
    assert resident_kv_tokens(vllm, 100, 1901, 8192) == 100 + 951  # rounded up
    assert resident_kv_tokens(vllm, 1000, 1000, 1200) == 1200  # never past the context
    assert resident_kv_tokens(trt, 1000, 1000, 8192) == 2000


def test_vllm_runs_what_its_free_kv_cache_holds_at_the_mean_resident_length() -> None:
    # Qwen3-30B-A3B bf16 KV: 48 layers x 4 KV heads x 128 x 2 (K, V) x 2 B = 98,304 B per token.
    # One 24 GiB card: 0.9 x 24 GiB - weights - profile run - 0.5 GB, over 1500 tokens a request.
    plan = plan_inference(
        model="qwen3-coder-30b-a3b",
        on="rtx-4090",
        engine="vllm",
        quant="AWQ-4bit-g128",
        prompt=1000,
        gen=1000,
        concurrency=400,
        levers=False,
    )
    device = plan.memory.per_device[0]
    free = (
        0.9 * 24 * 2**30
        - device.weights_bytes
        - _workspace("qwen3-coder-30b-a3b", "rtx-4090", "vllm")
        - 0.5 * GB
    )
    assert plan.serving is not None
    assert plan.serving.running_batch == int(free // (98_304 * 1500))


def test_a_cap_on_running_requests_sizes_vllms_profile_logits() -> None:
    # --max-batch is vLLM's --max-num-seqs: its profile run takes logits at min(max_num_seqs,
    # step tokens) rows, so a cap of 8 on a 24 GiB card keeps 8 rows instead of the default 256
    # (Llama 3.1 8B: 128,256 vocabulary entries x 14 B each through the sampler).
    accelerator = get_accelerator("rtx-4090")
    overheads = engine_overheads("vllm", device_class(accelerator))
    spec = cached_model("llama-3.1-8b")
    default = workspace_bytes(spec, accelerator, overheads)
    capped = workspace_bytes(spec, accelerator, overheads, max_sequences=8)
    assert default - capped == pytest.approx((256 - 8) * 128_256 * 14, rel=1e-9)
    plans = [
        plan_inference(model="llama-3.1-8b", on="rtx-4090", engine="vllm", levers=False, **cap)
        for cap in ({}, {"max_batch": 8})
    ]
    free = [p.memory.per_device[0].activations_bytes for p in plans]
    assert free[0] - free[1] == pytest.approx((256 - 8) * 128_256 * 14, rel=1e-9)
