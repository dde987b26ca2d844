"""Serving physics: a batched decode step is a sequence of kernels, each its own roofline (the
weight GEMMs and the attention add: Pope et al. 2022 Sec. 2; Sarathi-Serve Sec. 2.3), batch-1
decode keeps one roofline for the whole step (the llama.cpp factors were fitted that way);
batched prefill pays the tensor-parallel all-reduces; NVFP4 weights, GEMM speed and the
published devices as their datasheets and checkpoints say."""

from __future__ import annotations

from dataclasses import replace

import pytest
from tests.estimate.test_inference_physics import PCIE, context, dense_model, gpu, stage

from rigwise.api.infer import plan_inference
from rigwise.estimate import comms
from rigwise.estimate.collective_latency import collective_link
from rigwise.estimate.engine_overheads import device_class, engine_overheads
from rigwise.estimate.inference import (
    Context,
    decode_phase,
    decode_stage_parts,
    kernel_rooflines,
    kernel_sums,
)
from rigwise.estimate.inference_batched import (
    decode_step_seconds,
    prefill_seconds_per_token_batched,
)
from rigwise.estimate.inference_efficiency import catalog_efficiency
from rigwise.estimate.model_memo import flops_parts
from rigwise.hardware import get_accelerator
from rigwise.models import load_model
from rigwise.validation.inference_readers import _Names, default_directory


def test_kernel_rooflines_keep_each_kernels_longer_side_and_add_them() -> None:
    # GEMM: 2 s of bytes, 1 s of FLOPs -> 2 s memory-bound; attention: 1 s vs 3 s -> 3 s compute
    assert kernel_rooflines((2.0, 1.0), (1.0, 3.0)) == (2.0, 3.0)
    # one roofline over the whole step would overlap them: max(2 + 1, 1 + 3) = 4 s, not 5 s
    assert kernel_sums((2.0, 1.0), (1.0, 3.0)) == (3.0, 4.0)


def test_batched_step_adds_compute_bound_gemms_to_memory_bound_attention() -> None:
    spec, acc = dense_model(), gpu()  # 1000 GB/s, 100 TFLOP/s bf16; CAL: 0.8 / 0.5 / 0.5
    ctx, batch, ctx_len = context(spec), 256, 2048
    matmul, attention = flops_parts(spec, ctx_len)
    gemm = max(ctx.weights_bytes / 800e9, batch * matmul / 50e12)
    attend = max(batch * spec.kv_cache_bytes(ctx_len, "f16") / 500e9, batch * attention / 50e12)
    parts = decode_stage_parts(ctx, stage(acc), ctx_len, batch, kernels=True)
    assert parts["compute"] == pytest.approx(batch * matmul / 50e12)  # the GEMMs: compute-bound
    assert parts["memory_bandwidth"] + parts["compute"] == pytest.approx(gemm + attend)
    step = decode_step_seconds(ctx, (stage(acc),), None, ctx_len, batch)
    assert step == pytest.approx(gemm + attend + parts["kernel_overhead"])
    single = decode_stage_parts(ctx, stage(acc), ctx_len, batch)  # one roofline: overlaps them
    assert max(single["memory_bandwidth"], single["compute"]) < gemm + attend


def test_batch_one_decode_is_unchanged_by_the_kernel_split() -> None:
    ctx = context(dense_model())
    whole = decode_stage_parts(ctx, stage(gpu()), 4096, 1)
    split = decode_stage_parts(ctx, stage(gpu()), 4096, 1, kernels=True)
    assert whole["compute"] < whole["memory_bandwidth"]  # memory-bound at batch 1
    assert split["memory_bandwidth"] == pytest.approx(whole["memory_bandwidth"])
    assert split["compute"] == 0.0


def test_vllm_streams_weights_on_gddr_as_on_hbm() -> None:
    # efficiency_inference.csv: one vLLM figure (fitted on an A100 and an L4 row, 0.89) for
    # HBM and GDDR cards (llama.cpp reaches 0.83-0.997 of GDDR datasheet bandwidth)
    hbm = catalog_efficiency("vllm", "nvidia-hbm", "bf16").decode_bandwidth_efficiency
    for klass, quant in (("nvidia-gddr", "bf16"), ("nvidia-gddr", "fp8"), ("nvidia-hbm", "fp8")):
        assert catalog_efficiency("vllm", klass, quant).decode_bandwidth_efficiency == hbm == 0.89


def test_batched_prefill_pays_the_tensor_parallel_all_reduces_per_token() -> None:
    # Megatron-LM Sec. 3: two all-reduces of each token's hidden state per layer; a scheduler
    # step of workspace_tokens prompt tokens all-reduces them together (vLLM: 8192)
    ctx = context(dense_model(), engine="vllm")
    tokens = ctx.overheads.workspace_tokens
    one = prefill_seconds_per_token_batched(ctx, (stage(gpu()),), 2048)
    two = prefill_seconds_per_token_batched(ctx, (stage(gpu(), tp=2),), 2048)
    size = tokens * 4096 * 2  # bf16 hidden states of the step
    ring = comms.ring_all_reduce(size, 2, collective_link(PCIE, 2)).seconds
    assert two == pytest.approx(one / 2 + 32 * 2 * ring / tokens)


def test_nvfp4_checkpoints_keep_embeddings_and_lm_head_in_bf16() -> None:
    # ModelOpt NVFP4 (nvidia/Llama-3.3-70B-Instruct-FP4): hf_quant_config exclude_modules
    # ["lm_head"]; the embedding is no Linear layer, so both stay BF16 (as FP8 checkpoints do)
    spec = load_model("llama-3.3-70b")
    head = spec.params_lm_head or 0
    expected = spec.params_matmul * 4.5 + (spec.params_embedding + spec.params_positions) * 16
    expected += head * 16 + spec.params_vectors * 16
    assert spec.weights_bytes("NVFP4") == pytest.approx(expected / 8)


def test_nvfp4_gemms_on_b200_reach_the_kernel_benchmark_share_of_the_fp8_fit() -> None:
    # B200, CUTLASS, M=16384 N=6144 K=4096 with activation quantization: NVFP4 3039 of 9000
    # TFLOP/s (vLLM PR #20646), FP8 2226 of 4500 (vLLM PR #19566)
    fp8 = catalog_efficiency("tensorrt-llm", "nvidia-hbm", "fp8")
    fp4 = catalog_efficiency("tensorrt-llm", "nvidia-hbm", "nvfp4")
    share = (3039 / 9000) / (2226 / 4500)
    assert fp4.serving_compute_efficiency == round(fp8.serving_compute_efficiency * share, 2)
    assert fp4.prefill_compute_efficiency == round(fp8.prefill_compute_efficiency * share, 2)
    # measured on SM100 only: the GDDR (SM120) Blackwell cards keep the FP8 fit
    gddr = catalog_efficiency("tensorrt-llm", "nvidia-gddr", "nvfp4")
    assert gddr.serving_compute_efficiency == fp8.serving_compute_efficiency


def test_the_published_rtx_pro_server_edition_is_planned_as_the_server_edition() -> None:
    names = _Names(default_directory())
    found, why = names.get("gpu", "RTX 6000 Pro Blackwell Server Edition")
    assert (found, why) == ("rtx-pro-6000-blackwell-server", "")
    assert get_accelerator(found).memory_bandwidth_bytes_per_s == 1597e9  # its datasheet


def test_an_engine_step_overhead_is_paid_once_per_step() -> None:
    base = context(dense_model(), engine="vllm")
    ctx = replace(base, overheads=replace(base.overheads, step_overhead_s=0.0))
    slow = replace(base, overheads=replace(base.overheads, step_overhead_s=1e-3))
    for batch in (1, 64):
        plain = decode_step_seconds(ctx, (stage(gpu()),), None, 2048, batch)
        paid = decode_step_seconds(slow, (stage(gpu()),), None, 2048, batch)
        assert paid - plain == pytest.approx(1e-3)
    one = decode_phase(slow, (stage(gpu()),), None, 2048)
    assert one.parts["engine_step_overhead"] == 1e-3


def test_the_host_work_per_sequence_is_paid_for_every_sequence_beyond_the_first() -> None:
    base = context(dense_model(), engine="vllm")
    ctx = replace(base, overheads=replace(base.overheads, sequence_overhead_s=0.0))
    slow = replace(base, overheads=replace(base.overheads, sequence_overhead_s=38e-6))
    for batch, extra_s in ((1, 0.0), (2, 38e-6), (32, 31 * 38e-6), (500, 499 * 38e-6)):
        plain = decode_step_seconds(ctx, (stage(gpu()),), None, 2048, batch)
        paid = decode_step_seconds(slow, (stage(gpu()),), None, 2048, batch)
        assert paid - plain == pytest.approx(extra_s, abs=1e-12)


def test_vllm_host_work_per_sequence_reproduces_its_fit_row_and_the_rows_kept_apart() -> None:
    # engine_overheads.csv vllm sequence_overhead_us 38, fitted on the L4 c32 ITL row (7.1 ms);
    # the c2..c16 rows of the same sweep (holdout_vllm_serving_sweeps.csv, role independent)
    # rise 5.2 -> 6.0 ms: within 1.1 % each with the same 38 us, -1.8..-9.6 % without it
    for concurrency, itl_s in ((2, 0.0052), (4, 0.0053), (8, 0.0055), (16, 0.0060), (32, 0.0071)):
        plan = plan_inference(
            model="qwen2.5-0.5b", on="l4", quant="BF16", engine="vllm", tp=1, prompt=256,
            gen=128, concurrency=concurrency, levers=False,
        )  # fmt: skip
        assert plan.serving.tpot_s == pytest.approx(itl_s, rel=0.012)


@pytest.mark.parametrize(
    ("options", "metric", "published"),
    [
        # vllm_public_serving.csv: vLLM 0.23, A100 40GB, Llama-3.1-8B BF16, ~75 tok/s at c1
        (dict(model="llama-3.1-8b", on="a100-40gb", quant="BF16", engine="vllm", tp=1,
              prompt=1024, gen=128, concurrency=1), "decode", 75.0),
        # holdout_vllm_serving_sweeps.csv: vLLM 0.23, L4, Qwen2.5-0.5B BF16, ITL 5.1 ms at c1
        (dict(model="qwen2.5-0.5b", on="l4", quant="BF16", engine="vllm", tp=1, prompt=256,
              gen=128, concurrency=1), "tpot", 0.0051),
    ],
)  # fmt: skip
def test_vllm_weight_streaming_and_step_overhead_reproduce_their_two_fit_rows(
    options: dict, metric: str, published: float
) -> None:
    # two rows, two unknowns (efficiency_inference.csv vllm 0.89; engine_overheads.csv 1140 us)
    plan = plan_inference(**options, levers=False)
    value = plan.decode.tokens_per_s if metric == "decode" else plan.serving.tpot_s
    assert value == pytest.approx(published, rel=0.01)


def test_the_h100_burst_row_cannot_have_run_its_500_requests_in_one_batch() -> None:
    # vllm_public_serving.csv (kvcached PR #331, vLLM 0.19, H100, Qwen3-0.6B, 500 x 512/128 at
    # rate inf): mean TPOT 5.45 ms at 94.91 req/s. Reading the KV caches of 500 sequences at
    # the mean context 512 + 64 takes 2 x 28 layers x 8 heads x 128 x 2 B = 114688 B a token,
    # x 576 x 500 = 33.0 GB, 9.86 ms at the datasheet's 3.35 TB/s: more than the published
    # TPOT. So the engine never decoded the 500 at once: the front end admitted them (Little's
    # law: 94.91 req/s x 127 x 5.45 ms = 66 sequences decoding on average). rigwise models such
    # a front end (serving_frontend, 77.8 us a token from vLLM PR #12287: 12.85k tokens/s); with
    # a datacenter host's work per sequence (engine_overheads.csv vllm nvidia-hbm, 14 us, fitted
    # on vLLM PR #53060's H100 PCIe rows) its engine outruns that cap, so the cap binds and the
    # running batch settles below the 500 asked.
    kv_bytes = load_model("qwen3-0.6b").kv_cache_bytes(576, "bf16") * 500
    assert kv_bytes == 114688 * 576 * 500
    seconds = kv_bytes / get_accelerator("h100-sxm").memory_bandwidth_bytes_per_s
    assert seconds == pytest.approx(9.86e-3, rel=1e-3)
    assert seconds > 5.45e-3
    plan = plan_inference(
        model="qwen3-0.6b", on="h100-sxm", quant="BF16", engine="vllm", prompt=512, gen=128,
        concurrency=500, levers=False,
    )  # fmt: skip
    assert plan.serving is not None and plan.serving.running_batch < 500
    # the front end, not the engine
    assert plan.serving.aggregate_tokens_per_s == pytest.approx(1e6 / 77.8, rel=1e-3)


def test_marlin_w4a16_streams_weights_at_the_kernel_benchmark_share_on_hbm() -> None:
    # H100, N = K = 8192 channelwise, M = 1: torch-w16a16 2.30 TFLOP/s, marlin-w4a16 4.98
    # (inclusionAI/humming PR #2); a 4-bit weight is a quarter of the bytes
    share = 4.98 / 2.30 / 4
    for engine in ("vllm", "sglang"):
        dense = catalog_efficiency(engine, "nvidia-hbm", "bf16").decode_bandwidth_efficiency
        for quant in ("awq-4bit-g128", "gptq-4bit-g128"):
            marlin = catalog_efficiency(engine, "nvidia-hbm", quant).decode_bandwidth_efficiency
            assert marlin == round(dense * share, 2)
            # GDDR cards ask a third of the bytes per SM of an H100: they keep the 16-bit row
            gddr = catalog_efficiency(engine, "nvidia-gddr", quant)
            plain = catalog_efficiency(engine, "nvidia-gddr", "bf16")
            assert gddr.decode_bandwidth_efficiency == plain.decode_bandwidth_efficiency


def test_vllm_host_work_per_sequence_on_a_datacenter_host_reproduces_its_fit_rows() -> None:
    # engine_overheads.csv vllm nvidia-hbm sequence_overhead_us 14, fitted on vLLM PR #53060's
    # pure-decode rows (vllm_public_serving.csv, role fit): Qwen2.5-0.5B BF16 on an H100 PCIe,
    # cache 128 + 128 output tokens, TPOT 1.677 ms at batch 1 and 2.148 ms at batch 32
    h100 = get_accelerator("h100-pcie")
    assert device_class(h100) == "nvidia-hbm"
    assert engine_overheads("vllm", "nvidia-hbm").sequence_overhead_s == pytest.approx(14e-6)
    # the L4 fit (4-vCPU VM) keeps its own value: a host property, not the GPU's
    assert engine_overheads("vllm", "nvidia-gddr").sequence_overhead_s == pytest.approx(38e-6)
    spec = load_model("qwen2.5-0.5b")
    ctx = Context(
        spec=spec, engine="vllm", quant="BF16", kv_dtype="f16",
        weights_bytes=spec.weights_bytes("BF16"),
        overheads=engine_overheads("vllm", device_class(h100)),
        offload_efficiency=None, calibration=None,
    )  # fmt: skip
    one, thirty_two = (
        decode_step_seconds(ctx, (stage(h100),), None, 192, batch) for batch in (1, 32)
    )
    # the engine step grows by the published increment, 2.148 - 1.677 ms, mid-decode (context 192)
    assert thirty_two - one == pytest.approx(2.148e-3 - 1.677e-3, rel=0.03)
