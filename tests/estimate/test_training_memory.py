"""Training memory per GPU: Korthikanti et al. 2022 activations, ZeRO sharding, LoRA/QLoRA."""

from __future__ import annotations

import dataclasses

import pytest

from rigwise.estimate.compute import training_factors
from rigwise.estimate.training_layout import Layout, LayoutArrays, Workload, geometry
from rigwise.estimate.training_memory import (
    activation_memory,
    lora_params,
    memory_per_gpu,
    state_memory,
)
from rigwise.models import ModelSpec


def gpt(
    h: int = 6144, a: int = 64, layers: int = 48, vocab: int = 51200, seq: int = 2048
) -> ModelSpec:
    per_layer = 12 * h * h + 13 * h
    total = layers * per_layer + vocab * h + seq * h
    return ModelSpec(
        name="gpt-test",
        architecture="gpt2",
        num_layers=layers,
        hidden_size=h,
        intermediate_size=4 * h,
        num_attention_heads=a,
        num_kv_heads=a,
        head_dim=h // a,
        vocab_size=vocab,
        tie_word_embeddings=True,
        max_context=seq,
        params_total=total,
        params_active=total,
        params_embedding=vocab * h,
        params_positions=seq * h,
        gated_mlp=False,
    )


def llama(kv_heads: int = 8) -> ModelSpec:
    h, layers, f, vocab = 4096, 32, 14336, 128256
    attention = h * 128 * (2 * 32 + 2 * kv_heads)
    total = layers * (attention + 3 * h * f + 2 * h) + 2 * vocab * h + h
    return ModelSpec(
        name="llama-test",
        architecture="llama",
        num_layers=layers,
        hidden_size=h,
        intermediate_size=f,
        num_attention_heads=32,
        num_kv_heads=kv_heads,
        head_dim=128,
        vocab_size=vocab,
        tie_word_embeddings=False,
        max_context=8192,
        params_total=total,
        params_active=total,
        params_embedding=vocab * h,
        params_lm_head=vocab * h,
    )


GPT_WORK = Workload(seq_len=2048, global_batch=4, flash_attention=False, dropout=True)


def arrays(**kw: object) -> LayoutArrays:
    return LayoutArrays.from_layouts([Layout(**kw)])  # type: ignore[arg-type]


def activations_no_logits(spec: ModelSpec, work: Workload, **kw: object) -> float:
    """Activation bytes without the last-stage logits (a vocab of 0 removes them)."""
    geo = dataclasses.replace(geometry(spec), vocab=0)
    return float(activation_memory(geo, work, arrays(**kw))[0])


def test_korthikanti_eq2_tensor_parallel_without_sp() -> None:
    # sbh(10 + 24/t + 5as/(ht)) per layer, Korthikanti 2022 Eq. 2, times 48 layers.
    s, b, h, a, t = 2048, 4, 6144, 64, 8
    expected = s * b * h * (10 + 24 / t + 5 * a * s / (h * t)) * 48
    got = activations_no_logits(gpt(), GPT_WORK, tp=8, micro_batch=4, global_batch=4)
    assert got == pytest.approx(expected, rel=1e-9)


def test_korthikanti_sequence_parallel_and_selective_recompute() -> None:
    # SP + selective: sbh * 34 / t per layer (Korthikanti Eq. 6).
    s, b, h, t = 2048, 4, 6144, 8
    expected = s * b * h * 34 / t * 48
    got = activations_no_logits(
        gpt(),
        GPT_WORK,
        tp=8,
        micro_batch=4,
        global_batch=4,
        recompute="selective",
        sequence_parallel=True,
    )
    assert got == pytest.approx(expected, rel=1e-9)


def test_full_recompute_keeps_layer_inputs_plus_one_layer() -> None:
    base = dict(tp=8, micro_batch=4, global_batch=4, sequence_parallel=True)
    full = activations_no_logits(gpt(), GPT_WORK, recompute="full", **base)
    one_layer = activations_no_logits(gpt(), GPT_WORK, **base) / 48
    assert full == pytest.approx(2 * 2048 * 4 * 6144 / 8 * 48 + one_layer, rel=1e-9)


def test_interleaved_pipeline_holds_more_microbatches() -> None:
    # 175B row of Korthikanti Fig. 1: p microbatches x (1 + (p-1)/(p v)).
    spec = gpt(12288, 96, 96)
    work = dataclasses.replace(GPT_WORK, global_batch=64)
    plain = activations_no_logits(spec, work, tp=8, pp=8, micro_batch=1, global_batch=64)
    inter = activations_no_logits(spec, work, tp=8, pp=8, vpp=3, micro_batch=1, global_batch=64)
    assert inter / plain == pytest.approx(1 + 7 / 24, rel=1e-9)


def test_flash_attention_removes_the_quadratic_term() -> None:
    work = dataclasses.replace(GPT_WORK, seq_len=8192)
    std = activations_no_logits(gpt(), work, tp=8, micro_batch=1, global_batch=4)
    flash = activations_no_logits(
        gpt(), dataclasses.replace(work, flash_attention=True), tp=8, micro_batch=1, global_batch=4
    )
    assert flash < 0.5 * std


def test_gqa_stores_fewer_key_value_bytes() -> None:
    work = Workload(seq_len=4096, global_batch=1)
    mha = activations_no_logits(llama(kv_heads=32), work)
    gqa = activations_no_logits(llama(kv_heads=8), work)
    # K and V: 2 x 2 bytes x (32 - 8) heads x 128 per token per layer.
    assert mha - gqa == pytest.approx(4 * 24 * 128 * 4096 * 32, rel=1e-9)


def test_zero_stages_shard_optimizer_then_gradients_then_weights() -> None:
    geo, work = geometry(gpt()), Workload(precision="bf16")
    stages = [state_memory(geo, work, arrays(dp=8, zero=z)) for z in range(4)]
    weights, grads, opt = (float(x[0]) for x in stages[0])
    assert opt == pytest.approx(3 * grads)  # 12 bytes vs 4 bytes per parameter
    assert float(stages[1][2][0]) == pytest.approx(opt / 8)
    assert float(stages[2][1][0]) == pytest.approx(grads / 8)
    assert float(stages[3][0][0]) < weights / 2


def test_fp16_keeps_two_byte_gradients() -> None:
    geo = geometry(gpt())
    bf16 = float(state_memory(geo, Workload(precision="bf16"), arrays())[1][0])
    fp16 = float(state_memory(geo, Workload(precision="fp16"), arrays())[1][0])
    assert fp16 == pytest.approx(bf16 / 2)


def test_lora_rank_16_on_all_linear_layers_of_llama_8b() -> None:
    # r (d_in + d_out) per matrix: q,o 4096+4096; k,v 4096+1024; gate,up,down 4096+14336.
    per_layer = 16 * (2 * 8192 + 2 * 5120 + 3 * 18432)
    assert lora_params(geometry(llama()), Workload(method="lora")) == 32 * per_layer


def test_qlora_base_is_about_a_quarter_of_lora_base() -> None:
    geo = geometry(llama())
    lora = float(state_memory(geo, Workload(method="lora"), arrays())[0][0])
    qlora = float(state_memory(geo, Workload(method="qlora"), arrays())[0][0])
    assert 0.3 < qlora / lora < 0.45  # linear layers 4.127 bits, embeddings stay bf16


def test_fsdp_cpu_offload_leaves_only_the_gathered_layers_of_a_qlora_base() -> None:
    geo = geometry(llama())
    lay = arrays(dp=2, zero=3)
    work = Workload(method="qlora", paged_optimizer=False)
    on_gpu = state_memory(geo, work, lay)
    offloaded = state_memory(geo, dataclasses.replace(work, offload="params"), lay)
    adapters = float(offloaded[1][0])  # their bf16/fp32 copy stays with the gathered layers
    two_layers_nf4 = 2 * geo.layer_params_total() * 0.5
    # The root unit (bf16 embedding and head, never quantised) stays whole on the GPU,
    # bitsandbytes dequantises the largest matrix (h x ffn) to bf16 for each GEMM, and the
    # NF4 block constants (0.127 bits per weight, a quant_state FSDP does not own) stay whole.
    root = (geo.embedding_params + geo.head_params) * 2.0
    dequant = geo.hidden * geo.ffn * 2.0
    constants = geo.layers * geo.layer_params_total() * 0.127 / 8
    expected = two_layers_nf4 + root + dequant + constants
    assert float(offloaded[0][0]) - adapters == pytest.approx(expected, rel=0.05)
    # Every NF4 shard of the blocks (half of 4 bits per parameter on 2 GPUs) leaves.
    block_shards = geo.layers * geo.layer_params_total() * (4 / 8) / 2
    saved = float(on_gpu[0][0]) - float(offloaded[0][0])
    assert saved > 0.95 * block_shards
    assert float(offloaded[2][0]) == 0.0 < float(on_gpu[2][0])


def test_fsdp_does_not_shard_the_nf4_block_constants() -> None:
    # quant_state is no parameter: FSDP shards the 4-bit codes, every rank keeps the constants.
    geo, work = geometry(llama()), Workload(method="qlora")
    two, eight = (float(state_memory(geo, work, arrays(dp=n, zero=3))[0][0]) for n in (2, 8))
    base_linear = geo.layers * geo.layer_params_total()
    other = geo.params_total - base_linear
    codes_and_other = base_linear * 0.5 + other * 2.0
    root = (geo.embedding_params + geo.head_params) * 2.0
    # 2 -> 8 GPUs: the codes, the bf16 rest and the root's own shard shrink, constants do not.
    adapters = lora_params(geo, work) * 4.0  # fp32 adapters (mixed precision), sharded too
    saved = (codes_and_other - root + adapters) * (1 / 2 - 1 / 8)
    assert two - eight == pytest.approx(saved, rel=1e-6)


def test_fsdp_holds_two_blocks_and_the_root_unit_unsharded() -> None:
    """FSDP full fine-tune (Zhao et al. 2023 Sec. 3.4; FSDP1 ``_post_forward_reshard`` and
    FSDP2 ``fully_shard`` keep the root unit unsharded after the forward): on top of the
    1/N shards, two bf16 blocks and the whole root unit (embedding + head), and the bf16
    gradients of two blocks and of the head, made first and reduce-scattered last."""
    geo, work = geometry(llama()), Workload(method="full", pure_bf16=True)
    layer, head = geo.layer_params_total(), geo.head_params
    root = geo.embedding_params + head
    for n in (2, 8):
        weights, grads, _ = state_memory(geo, work, arrays(dp=n, zero=3))
        expected_w = geo.params_total * 2 / n + 2 * layer * 2 + root * 2 * (1 - 1 / n)
        expected_g = geo.params_total * 2 / n + (2 * layer + head) * 2
        assert float(weights[0]) == pytest.approx(expected_w, rel=1e-6)
        assert float(grads[0]) == pytest.approx(expected_g, rel=1e-6)
    # CPU offload of the parameters moves every shard (and the sharded gradients) to the host,
    # not the unsharded working set.
    offload = dataclasses.replace(work, offload="params")
    weights, grads, optimizer = state_memory(geo, offload, arrays(dp=8, zero=3))
    assert float(weights[0]) == pytest.approx((2 * layer + root) * 2, rel=1e-6)
    assert float(grads[0]) == pytest.approx((2 * layer + head) * 2, rel=1e-6)
    assert float(optimizer[0]) == 0.0


def test_block_gradients_take_the_place_of_freed_activations_at_the_peak() -> None:
    # Block gradients appear once the logits and the top layer's activations are freed: with
    # 8192-token sequences (GBs of both) they do not raise the peak; with 16 tokens and no
    # vocabulary nearly all of them count.
    factors = training_factors("h100-sxm")
    work = Workload(method="full", pure_bf16=True)
    layer = geometry(llama()).layer_params_total()
    for seq, vocab, counted in ((8192, None, 0.0), (16, 0, 1.0)):
        geo = geometry(llama())
        geo = geo if vocab is None else dataclasses.replace(geo, vocab=vocab)
        seq_work = dataclasses.replace(work, seq_len=seq)
        lay = arrays(dp=8, zero=3, recompute="full")
        state = float(state_memory(geo, seq_work, lay)[1][0])
        at_peak = float(memory_per_gpu(geo, seq_work, lay, factors).gradients[0])
        assert state - at_peak == pytest.approx((1 - counted) * 4 * layer, abs=0.01 * layer)


def test_memory_total_adds_reserved_bytes_and_fragmentation() -> None:
    factors = training_factors("a100-sxm-80gb")
    mem = memory_per_gpu(
        geometry(gpt()), GPT_WORK, arrays(tp=8, micro_batch=4, global_batch=4), factors
    )
    allocated = float(mem.weights[0] + mem.gradients[0] + mem.optimizer[0] + mem.activations[0])
    reserved = factors.memory_reserved_bytes + factors.nccl_buffer_bytes  # 8 GPUs: NCCL too
    expected = allocated * (1 + factors.fragmentation_fraction) + reserved
    assert float(mem.total[0]) == pytest.approx(expected)
    # The CUDA context and NCCL's buffers are outside PyTorch's caching allocator: what its
    # reserved counter holds is the tensors and the allocator's slack.
    assert float(mem.outside_allocator[0]) == pytest.approx(reserved)
    one = memory_per_gpu(geometry(gpt()), GPT_WORK, arrays(micro_batch=1, global_batch=1), factors)
    assert float(one.outside_allocator[0]) == pytest.approx(factors.memory_reserved_bytes)


def test_gradients_stay_unsharded_across_microbatches_under_pipelining() -> None:
    # Megatron's distributed optimizer keeps a full gradient buffer, DeepSpeed forbids ZeRO-2
    # with PP, FSDP2 with PP syncs only after the last microbatch: ZeRO-2 saves no gradients.
    geo, work = geometry(gpt()), Workload()
    flat = state_memory(geo, work, arrays(dp=8, zero=2))
    piped = state_memory(geo, work, arrays(dp=8, pp=4, zero=2))
    piped_z1 = state_memory(geo, work, arrays(dp=8, pp=4, zero=1))
    assert float(piped[1][0]) == pytest.approx(float(piped_z1[1][0]))
    assert float(piped[1][0]) == pytest.approx(8 * float(flat[1][0]) / 4, rel=0.05)


def test_cut_cross_entropy_keeps_no_logits() -> None:
    # Wijmans et al. 2024: the loss is computed in on-chip tiles of the output projection, so
    # the activations are those of a model without vocabulary; a chunked loss keeps 3 bytes.
    geo, lay = geometry(llama()), arrays(recompute="full", micro_batch=1)
    fused = Workload(method="lora", seq_len=4096, fused_loss=True)
    no_vocab = dataclasses.replace(geo, vocab=0)
    assert float(activation_memory(geo, fused, lay)[0]) == pytest.approx(
        float(activation_memory(no_vocab, fused, lay)[0])
    )
    chunked = dataclasses.replace(fused, fused_loss=False, chunked_loss=True)
    extra = float(activation_memory(geo, chunked, lay)[0] - activation_memory(geo, fused, lay)[0])
    assert extra == pytest.approx(4096 * 128256 * 3.0)


def test_embedding_in_its_own_fsdp_unit_is_resharded_after_the_forward() -> None:
    # torchtitan PR #1094 wraps tok_embeddings in a unit of its own, resharded after the
    # forward: the peak keeps only its 1/8 shard. Llama 3.1 8B embedding: 128256 x 4096 =
    # 525,336,576 bf16 parameters = 1,050,673,152 bytes whole, 131,334,144 as a 1/8 shard.
    geo, work = geometry(llama()), Workload(method="full", seq_len=8192)
    lay = arrays(dp=8, zero=3, recompute="full")
    own = dataclasses.replace(work, embedding_own_unit=True)
    factors = training_factors("h100-sxm")
    root = memory_per_gpu(geo, work, lay, factors)
    split = memory_per_gpu(geo, own, lay, factors)
    saved = 1_050_673_152 - 131_334_144
    assert float(root.weights[0] - split.weights[0]) == pytest.approx(saved)
    # Allocator slack is a fraction of the allocated bytes, so the total saves that share too.
    slack = 1 + factors.fragmentation_fraction
    assert float(root.total[0] - split.total[0]) == pytest.approx(saved * slack)
    # The output head stays in the other unit, kept whole: two blocks and 7/8 of the head.
    held = float(state_memory(geo, own, lay)[0][0]) - geo.params_total * 2 / 8
    expected = 2 * geo.layer_params_total() * 2 + geo.head_params * 2 * 7 / 8
    assert held == pytest.approx(expected, rel=1e-9)
    # A tied embedding is the head's weight: it stays unsharded with the head.
    tied = dataclasses.replace(geo, tied=True, head_params=0.0)
    assert float(state_memory(tied, own, lay)[0][0]) == float(state_memory(tied, work, lay)[0][0])


def test_eager_cross_entropy_peaks_at_twelve_bytes_per_logit() -> None:
    # F.cross_entropy on fp32 logits, as its backward starts: log_softmax's saved fp32 output,
    # nll_loss's dense fp32 gradient and _log_softmax_backward_data's fp32 result (PyTorch
    # derivatives.yaml): 4 + 4 + 4 bytes per logit over 4096 tokens x 128256 vocabulary.
    geo, lay = geometry(llama()), arrays(recompute="full", micro_batch=1)
    fused = Workload(method="lora", seq_len=4096, fused_loss=True)
    eager = dataclasses.replace(fused, fused_loss=False)
    extra = float(activation_memory(geo, eager, lay)[0] - activation_memory(geo, fused, lay)[0])
    assert extra == pytest.approx(4096 * 128256 * 12.0)


def test_per_op_sac_keeps_every_other_matmul_output() -> None:
    # torchtitan per-op SAC saves the outputs of the 1st, 3rd, 5th and 7th matmul of a Llama
    # block (wq 2ad, wv 2kd, w1 2f, w2 2h), the attention output (2ad) and the block input
    # (2h); wk, wo and w3 are recomputed. Llama 3.1 8B: 4h + 4ad + 2kd + 2f bytes per token.
    h, a, k, d, f = 4096, 32, 8, 128, 14336
    work = Workload(seq_len=8192, selective_policy="op", fused_loss=True)
    got = activations_no_logits(llama(), work, recompute="selective", micro_batch=1)
    assert got == pytest.approx(32 * 8192 * (4 * h + 4 * a * d + 2 * k * d + 2 * f), rel=1e-9)


def test_per_op_sac_recomputes_an_attention_missing_from_its_save_list() -> None:
    # torchtitan runs cuDNN SDPA first on sm100 (PR #1196) while its _save_list named only the
    # flash and efficient SDPA ops until PR #2095: aten._scaled_dot_product_cudnn_attention is
    # PREFER_RECOMPUTE, so its output (2ad bytes per token) is not kept. Llama 3.1 8B:
    # 4h + 2ad + 2kd + 2f bytes per token, 2 GiB less than with the attention output saved.
    h, a, k, d, f = 4096, 32, 8, 128, 14336
    saved = Workload(seq_len=8192, selective_policy="op", fused_loss=True)
    redone = dataclasses.replace(saved, sac_saves_attention=False)
    got = activations_no_logits(llama(), redone, recompute="selective", micro_batch=1)
    assert got == pytest.approx(32 * 8192 * (4 * h + 2 * a * d + 2 * k * d + 2 * f), rel=1e-9)
    kept = activations_no_logits(llama(), saved, recompute="selective", micro_batch=1)
    assert kept - got == pytest.approx(2 * 1024**3)
    # Megatron's "attention" policy and full recompute do not read the save list.
    for policy, recompute in (("attention", "selective"), ("op", "full")):
        works = [dataclasses.replace(w, selective_policy=policy) for w in (saved, redone)]
        got_both = [activations_no_logits(llama(), w, recompute=recompute) for w in works]
        assert got_both[0] == got_both[1]
