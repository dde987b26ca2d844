"""Memory per GPU of a training run, as named parts, for many layouts at once (numpy).

Parts: weights, gradients, optimizer state (ZeRO-sharded), activations (Korthikanti et al.
2022, "Reducing Activation Recomputation in Large Transformer Models", arXiv:2205.05198,
Sec. 4, generalised to GQA and gated MLPs below), in-flight microbatches of the pipeline
schedule, LoRA adapters, and buffers/fragmentation (from data). The most loaded pipeline stage
is reported: stage 0 holds the embedding and ``p`` microbatches in flight.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from rigwise.estimate.compute import TrainingFactors
from rigwise.estimate.training_fsdp import grads_absent_at_peak, master_shard_bytes
from rigwise.estimate.training_layout import Geometry, LayoutArrays, Workload

ACT_BYTES = 2.0  # bf16/fp16 activations (fp8 training keeps activations in bf16)
# Mixed-precision training state per parameter (ZeRO paper, Rajbhandari et al. 2020, Sec. 3.1):
# 2-byte working weights, fp32 gradients (Megatron main_grad / FSDP fp32 reduce), and optimizer
# state = fp32 master copy + moments. 8-bit Adam keeps 1-byte moments (Dettmers et al. 2022);
# SGD one fp32 momentum; Adafactor a factored second moment (~0 per parameter; Shazeer & Stern
# 2018).
WEIGHT_BYTES = 2.0
GRAD_BYTES = 4.0
MASTER_BYTES = 4.0  # fp32 master copy of each weight under mixed precision


def grad_bytes(precision: str, pure_bf16: bool = False) -> float:
    """fp32 main gradients for bf16/fp8 (Megatron forces fp32 accumulation and reduction with
    bf16; FSDP reduces in fp32); fp16 runs keep and all-reduce fp16 gradients (Megatron
    default); pure bf16 keeps bf16 gradients (torchtune, LitGPT bf16-true)."""
    return 2.0 if precision == "fp16" or pure_bf16 else GRAD_BYTES


# Optimizer moments per parameter in fp32: Adam m and v (8), 8-bit Adam 1 byte each (Dettmers
# et al. 2022), SGD momentum (4), Adafactor factored second moment (~0; Shazeer & Stern 2018).
MOMENT_BYTES = {"adamw": 8.0, "adamw-8bit": 2.0, "sgd": 4.0, "adafactor": 0.0}
OPTIMIZER_BYTES = {name: MASTER_BYTES + moments for name, moments in MOMENT_BYTES.items()}


def optimizer_bytes(optimizer: str, pure_bf16: bool = False) -> float:
    """Optimizer state per parameter: mixed precision adds the fp32 master weights; pure bf16
    has none and keeps fp32 moments in bf16 (torch.optim.AdamW keeps state in the parameter
    dtype); 8-bit and factored states do not change."""
    moments = MOMENT_BYTES[optimizer]
    if not pure_bf16:
        return MASTER_BYTES + moments
    return moments / 2.0 if optimizer in ("adamw", "sgd") else moments


# QLoRA: NF4 (4 bits) + double-quantised block constants (0.127 bits/param), Dettmers et al.
# 2023 "QLoRA" Sec. 3 (double quantisation). Adapters train in fp32 with Adam: 4+4+8 bytes
# (PEFT casts adapters to fp32); pure bf16 keeps them in bf16: 2+2+4.
NF4_CONSTANT_BYTES = 0.127 / 8.0  # the block constants (absmax) of double quantisation
NF4_BYTES = 4.0 / 8.0 + NF4_CONSTANT_BYTES
ADAPTER_BYTES_PER_PARAM = 16.0
# Eager cross-entropy on fp32 logits peaks per logit as its backward starts: log_softmax's saved
# fp32 output, nll_loss's dense fp32 gradient and the fp32 gradient _log_softmax_backward_data
# writes (PyTorch derivatives.yaml), 4 + 4 + 4; Megatron's in-place vocab-parallel one holds less.
LOGITS_BYTES = 12.0
# Chunked cross-entropy keeps the bf16 logits of every chunk (2 bytes) and upcasts one chunk of
# eight at a time to fp32 with its gradient (8 bytes / 8): torchtune CEWithChunkedOutputLoss
# (num_output_chunks=8); Unsloth/Liger fused losses stay below this.
CHUNKED_LOGITS_BYTES = 2.0 + 8.0 / 8.0
# A compiled cross-entropy fuses the fp32 upcast, log-softmax and its backward: it keeps the
# bf16 logits (and a per-row fp32 log-sum-exp) and writes the bf16 gradient in one kernel
# (Inductor reduction fusion; torchtitan components/loss.py compiles cross_entropy_loss).
COMPILED_LOGITS_BYTES = 2.0 + 2.0


@dataclass(frozen=True)
class MemoryArrays:
    """Bytes per GPU for each layout (arrays); ``outside_allocator`` is the part of ``other``
    that PyTorch's caching allocator does not hold (CUDA context, NCCL buffers). ``total`` is
    summed at its first use and kept (a search reads it for each of its rankings)."""

    weights: np.ndarray
    gradients: np.ndarray
    optimizer: np.ndarray
    activations: np.ndarray
    other: np.ndarray
    outside_allocator: np.ndarray

    @functools.cached_property
    def total(self) -> np.ndarray:
        parts = (self.weights, self.gradients, self.optimizer, self.activations, self.other)
        return np.asarray(sum(parts))


def stage_params(geo: Geometry, lay: LayoutArrays) -> np.ndarray:
    """Parameters held by one GPU of the first pipeline stage before ZeRO sharding."""
    layers = np.ceil(geo.layers / lay.pp)
    attn_and_norms = geo.layer_params_total() - _moe_params_per_layer(geo) - _dense_mlp_share(geo)
    dense = (attn_and_norms + _dense_mlp_share(geo)) / lay.tp
    experts = _moe_params_per_layer(geo) / (lay.tp * lay.ep)
    embedding = geo.embedding_params / lay.tp
    head = np.where(lay.pp == 1, geo.head_params, 0.0) / lay.tp
    params: np.ndarray = layers * (dense + experts) + embedding + head
    return params


def _moe_params_per_layer(geo: Geometry) -> float:
    """Routed-expert parameters per layer (mean over layers)."""
    return geo.moe_layers * geo.experts * geo.expert_params / geo.layers


def _dense_mlp_share(geo: Geometry) -> float:
    return geo.dense_layers * geo.mlp_params / geo.layers


def lora_params(geo: Geometry, work: Workload) -> float:
    """Adapter parameters: r x (d_in + d_out) per targeted matrix per layer (Hu et al. 2021)."""
    h, q, kv, f = geo.hidden, geo.heads * geo.head_dim, geo.kv_heads * geo.head_dim, geo.ffn
    shapes = {"q": (h, q), "k": (h, kv), "v": (h, kv), "o": (q, h)}
    shapes.update({"gate": (h, f), "up": (h, f), "down": (f, h)})
    per_layer = sum(sum(shapes[t]) for t in work.lora_targets if t in shapes)
    return float(work.lora_rank * per_layer * geo.layers)


def _largest_tensor_params(geo: Geometry, lay: LayoutArrays) -> np.ndarray:
    """Parameters of the largest set of gradients alive at once with the optimizer step in the
    backward: one layer's, or the embedding/output projection (per GPU under TP)."""
    biggest = max(geo.layer_params_total(), geo.embedding_params, geo.head_params)
    return biggest / lay.tp.astype(float)


def _root_params(geo: Geometry, work: Workload, lay: LayoutArrays) -> np.ndarray:
    """Parameters FSDP keeps unsharded from the forward to the backward outside the blocks:
    the root unit's on the first stage, the embedding and the output head when one stage holds
    both (the transformer blocks are wrapped units of their own). An embedding wrapped in its
    own unit is resharded after its forward (torchtitan PR #1094, ``apply_fsdp``:
    ``fully_shard(model.tok_embeddings, reshard_after_forward=...)``), so only the head stays;
    a tied one is the head's weight and stays with it."""
    head = np.where(lay.pp == 1, geo.head_params, 0.0)
    own_unit = work.embedding_own_unit and not geo.tied
    embedding = 0.0 if own_unit else geo.embedding_params
    root: np.ndarray = (embedding + head) / lay.tp.astype(float)
    return root


def _unsharded_extra(
    geo: Geometry, work: Workload, lay: LayoutArrays, shards: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(weights, gradients) bytes that FSDP/ZeRO-3 holds unsharded on top of the shards.

    Weights: two transformer blocks (the one computing and the prefetched next one; Zhao et
    al. 2023 Sec. 3.4) and the root unit, which FSDP does not reshard after the forward
    because the backward needs it at once (FSDP1 ``_post_forward_reshard``; FSDP2
    ``fully_shard(reshard_after_forward=None)``: False for the root). Gradients, when the
    base trains: autograd writes each unit's gradients unsharded in the compute dtype (the
    unsharded parameter's dtype, FSDP ``MixedPrecisionPolicy.param_dtype``) before the
    reduce-scatter, so the block being differentiated and the previous one, whose
    reduce-scatter is still in flight, hold full gradients, and the output head's gradient,
    made first in the backward, waits for the root's reduce-scatter at its end.
    """
    layer = geo.layer_params_total() / lay.tp.astype(float)
    blocks = 2 * layer * WEIGHT_BYTES
    # The root's own shard is already counted with the others (an offloaded one lives on the host).
    root = _root_params(geo, work, lay) * WEIGHT_BYTES
    root = root if work.offload == "params" else root * (1.0 - 1.0 / shards)
    weights = np.where(lay.zero >= 3, blocks + root, 0.0)
    head = np.where(lay.pp == 1, geo.head_params, 0.0) / lay.tp.astype(float)
    grads = np.where((lay.zero >= 3) & work.trains_base, head * WEIGHT_BYTES, 0.0)
    return weights, grads + _block_grads(geo, work, lay)


def _block_grads(geo: Geometry, work: Workload, lay: LayoutArrays) -> np.ndarray:
    """Unsharded bf16 gradients of two blocks under FSDP when the base trains (none with
    pipelining, where the stage's gradients are kept whole anyway)."""
    layer = geo.layer_params_total() / lay.tp.astype(float)
    live = (lay.zero >= 3) & (lay.pp == 1) & work.trains_base
    grads: np.ndarray = np.where(live, 2 * layer * WEIGHT_BYTES, 0.0)
    return grads


def state_memory(
    geo: Geometry, work: Workload, lay: LayoutArrays
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(weights, gradients, optimizer) bytes per GPU, sharded by ZeRO stage over DP x CP.

    ZeRO-1 shards the optimizer state, ZeRO-2 also the gradients, ZeRO-3/FSDP also the
    weights (Rajbhandari et al. 2020 Sec. 5), plus what FSDP holds unsharded at the peak
    (``_unsharded_extra``).
    """
    params = stage_params(geo, lay)
    shards = (lay.dp * lay.cp).astype(float)
    if not work.trains_base:
        return _adapter_state(geo, work, lay, params, shards)
    opt_bytes = optimizer_bytes(work.optimizer, work.pure_bf16)
    gathered, unsharded_grads = _unsharded_extra(geo, work, lay, shards)
    master = master_shard_bytes(work, lay, params / shards)  # FSDP: the fp32 shard (training_fsdp)
    weights = np.where(lay.zero >= 3, params * WEIGHT_BYTES / shards, params * WEIGHT_BYTES)
    weights = np.where(master > 0, master, weights) + gathered
    g = grad_bytes(work.precision, work.pure_bf16)
    grads = np.where(lay.zero >= 2, params * g / shards, params * g)
    # Under pipelining gradients accumulate over the microbatches unsharded: ZeRO-3 also keeps
    # the stage's bf16 parameters (torchtitan/FSDP2 with PP skip the gradient sync until the
    # last microbatch), Megatron's distributed optimizer shards only the optimizer state and
    # keeps a full gradient buffer, and DeepSpeed forbids ZeRO-2/3 with pipeline parallelism.
    keep = (lay.zero >= 3) & (lay.pp > 1)
    weights = np.where(keep, params * WEIGHT_BYTES + master, weights)
    grads = np.where((lay.zero >= 2) & (lay.pp > 1), params * g, grads)
    if work.optimizer_in_backward:
        grads = np.minimum(grads, _largest_tensor_params(geo, lay) * g)
    optimizer = np.where(lay.zero >= 1, params * opt_bytes / shards, params * opt_bytes) - master
    # Paged optimizers (bitsandbytes, CUDA unified memory) evict their state to host memory
    # when the GPU runs short and page it back for the update (Dettmers et al. 2023 Sec. 3).
    if work.offload in ("optimizer", "params") or work.paged_optimizer:
        optimizer = optimizer * 0.0
    if work.offload in ("optimizer", "params"):
        # ZeRO-Offload moves each gradient to the host as the backward produces it, keeping
        # only the bucket in flight on the GPU (Ren et al. 2021 Sec. 4.1); FSDP CPU offload
        # moves each reduce-scattered shard, so only the unsharded gradients stay.
        grads = np.minimum(grads, _largest_tensor_params(geo, lay) * g)
        grads = np.where(lay.zero >= 3, 0.0, grads)
    if work.offload == "params":
        weights = np.where(lay.zero >= 3, gathered, weights)
    grads = np.where(keep, grads, grads + unsharded_grads)
    return weights, grads, optimizer


def _adapter_state(
    geo: Geometry, work: Workload, lay: LayoutArrays, params: np.ndarray, shards: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """LoRA/QLoRA: the frozen base (bf16, or NF4 for the linear layers under QLoRA) plus the
    adapters with their gradients and optimizer state. FSDP/ZeRO-3 shards the frozen base as
    well (FSDP flattens every parameter of a wrapped module; QLoRA keeps the NF4 storage
    sharded: bitsandbytes ``bnb_4bit_quant_storage``, Answer.AI FSDP-QLoRA 2024) and gathers
    two layers at a time in their storage format. The NF4 block constants are not parameters
    but the ``quant_state`` of each weight, which FSDP neither shards, syncs nor offloads:
    every rank keeps them whole on its GPU (Answer.AI fsdp_qlora train.py ``load_param``:
    'FSDP only syncs parameters and buffers, so the quant_state isn't copied')."""
    base_linear = geo.layers * geo.layer_params_total()
    other = geo.params_total - base_linear
    share = params / geo.params_total
    qlora = work.method == "qlora"
    per_param = NF4_BYTES - NF4_CONSTANT_BYTES if qlora else WEIGHT_BYTES
    constants = share * base_linear * (NF4_CONSTANT_BYTES if qlora else 0.0)
    weights = share * (base_linear * per_param + other * WEIGHT_BYTES)
    gathered = 2 * (geo.layer_params_total() / lay.tp) * per_param
    # The embedding and output head are not quantised (bitsandbytes replaces nn.Linear layers
    # of the blocks only) and stay unsharded in the root unit (``_unsharded_extra``).
    root = _root_params(geo, work, lay) * WEIGHT_BYTES
    gathered = gathered + (root if work.offload == "params" else root * (1.0 - 1.0 / shards))
    if qlora:
        gathered = gathered + _dequantised_bytes(geo, lay)
    kept = gathered + constants  # what a GPU holds besides its shard (also under offload)
    weights = np.where(lay.zero >= 3, weights / shards + kept, weights + constants)
    adapters = lora_params(geo, work) * share
    adapters = np.where(lay.zero >= 3, adapters / shards, adapters)
    weight_bytes = WEIGHT_BYTES if work.pure_bf16 else 4.0
    moments = 4.0 if work.pure_bf16 else 8.0
    # Paged optimizers move the adapter state to host memory under pressure, so it does not
    # count against the minimum (Dettmers et al. 2023 Sec. 3).
    optimizer = adapters * (0.0 if work.paged_optimizer else moments)
    if work.offload == "params":
        # FSDP CPUOffload keeps every shard (and the adapters' optimizer state) on the host;
        # the GPU holds only the layers gathered for compute (Answer.AI FSDP-QLoRA 2024).
        weights = np.where(lay.zero >= 3, kept, weights)
        optimizer = optimizer * 0.0
    return weights + adapters * weight_bytes, adapters * weight_bytes, optimizer


def _dequantised_bytes(geo: Geometry, lay: LayoutArrays) -> np.ndarray:
    """QLoRA multiplies by a bf16 copy of each NF4 weight, dequantised whole for the GEMM and
    freed after it (bitsandbytes ``MatMul4Bit.forward``: ``F.dequantize_4bit(B, ...)`` then
    ``linear``; the backward dequantises again): the largest matrix of a block is alive."""
    h, q, f = geo.hidden, geo.heads * geo.head_dim, geo.ffn
    largest: np.ndarray = max(h * f, h * q) / lay.tp.astype(float) * WEIGHT_BYTES
    return largest


def activation_bytes_per_token(geo: Geometry, work: Workload, lay: LayoutArrays) -> np.ndarray:
    """Stored activations of one layer per token per GPU with recompute 'none'.

    Korthikanti 2022 Eq. 1: sbh(34 + 5as/h). Itemised (bytes per token): layernorm inputs 4h,
    QKV and MLP inputs 2h + 2h, dropout masks h + h (GPT only); Q 2ad, K and V 2kd each (GQA:
    k KV heads), attention output 2ad; MLP 4f (GeLU: fc1 out + GeLU out) or 8f (SwiGLU: gate,
    up, silu(gate), product); softmax 2as + dropout 3as when attention is not fused (flash
    attention keeps only an fp32 log-sum-exp per head). TP splits all but the layernorm/
    dropout-mask/input terms; sequence parallelism splits those too (Korthikanti Eq. 2-4).
    """
    h, a, k, d = geo.hidden, geo.heads, geo.kv_heads, geo.head_dim
    s_local = work.seq_len / lay.cp
    masks = 2.0 * h if work.dropout else 0.0
    replicated = 8.0 * h + masks  # LN inputs 4h, QKV input 2h, MLP input 2h, dropout masks
    attention = 2.0 * a * d + 4.0 * k * d + 2.0 * a * d
    mlp = _mlp_activation_bytes(geo)
    if work.flash_attention:
        scores = 4.0 * a + 0.0 * s_local
    else:
        scores = (5.0 if work.dropout else 2.0) * a * s_local
    split = attention + mlp + scores
    tp = lay.tp.astype(float)
    replicated_share = np.where(lay.sequence_parallel > 0, replicated / tp, replicated)
    per_token: np.ndarray = replicated_share + split / tp
    return per_token


def _mlp_activation_bytes(geo: Geometry) -> float:
    per_ffn = 8.0 if geo.gated else 4.0
    if geo.moe_layers == 0:
        return per_ffn * geo.ffn
    # Routed tokens land on top-k experts (Fedus et al. 2021); shared experts see every token.
    moe = per_ffn * (geo.experts_per_token * geo.expert_params + geo.shared_expert_params)
    moe = moe / (geo.mlp_matrices * geo.hidden)
    return (geo.moe_layers * moe + geo.dense_layers * per_ffn * geo.ffn) / geo.layers


def _selective_bytes_per_token(geo: Geometry, work: Workload, lay: LayoutArrays) -> np.ndarray:
    """Selective recompute (Korthikanti Sec. 4.2) drops the attention-core s^2 terms.

    Policy "attention" (Megatron-Core/NeMo recompute_modules ["core_attn"]): with fused
    attention there is no s^2 term to drop, so the layer keeps what it keeps without
    recompute (the checkpointed core's inputs Q, K, V are kept anyway). Policy "op" (torchtitan
    per-op SAC, "Saves output of all compute ops, except every second mm") keeps the block input,
    wq, wv, attention, w1 and w2 outputs, and recomputes wk, wo, w3 and the elementwise ops;
    the attention output too where its SDPA op is not in the save list (sac_saves_attention).
    """
    full = activation_bytes_per_token(geo, work, lay)
    if not work.flash_attention:
        drop = (5.0 if work.dropout else 2.0) * geo.heads * work.seq_len / lay.cp / lay.tp
        without_scores: np.ndarray = full - drop
        return without_scores
    if work.selective_policy != "op":
        return full
    h, a, k, d, f = geo.hidden, geo.heads, geo.kv_heads, geo.head_dim, geo.ffn
    kept_split = (4.0 if work.sac_saves_attention else 2.0) * a * d + 2.0 * k * d + 2.0 * f
    kept_replicated = 4.0 * h
    tp = lay.tp.astype(float)
    rep = np.where(lay.sequence_parallel > 0, kept_replicated / tp, kept_replicated)
    kept: np.ndarray = np.minimum(full, rep + kept_split / tp)
    return kept


def _layer_terms(
    geo: Geometry, work: Workload, lay: LayoutArrays
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(stored per layer, working set of the layer recomputed, logits) bytes per GPU."""
    tokens = lay.micro_batch * work.seq_len / lay.cp
    full = activation_bytes_per_token(geo, work, lay) * tokens
    selective = _selective_bytes_per_token(geo, work, lay) * tokens
    # Full recompute keeps only each layer's input (2sbh, /t with SP) plus one layer's working set.
    checkpoint = np.where(lay.sequence_parallel > 0, 2.0 * geo.hidden / lay.tp, 2.0 * geo.hidden)
    per_layer = np.select([lay.recompute == 0, lay.recompute == 1], [full, selective], 0.0)
    per_layer = np.where(lay.recompute == 2, checkpoint * tokens, per_layer)
    working = np.where(lay.recompute == 2, full, 0.0)
    # The last stage holds the logits for the loss (vocab-parallel over TP).
    per_logit = COMPILED_LOGITS_BYTES if work.compiled_loss else LOGITS_BYTES
    if work.chunked_loss:
        per_logit = CHUNKED_LOGITS_BYTES
    if work.fused_loss:
        per_logit = 0.0  # Cut Cross-Entropy: logits live only in on-chip tiles
    logits = tokens * geo.vocab * per_logit / lay.tp
    return per_layer, working, logits


def activation_memory(geo: Geometry, work: Workload, lay: LayoutArrays) -> np.ndarray:
    """Activation bytes on the most loaded stage, with the 1F1B in-flight microbatches."""
    per_layer, working, logits = _layer_terms(geo, work, lay)
    layers = np.ceil(geo.layers / lay.pp)
    microbatches = np.maximum(work.global_batch // (lay.dp * lay.micro_batch), 1)
    in_flight = np.minimum(lay.pp, microbatches).astype(float)
    # Interleaved 1F1B keeps (1 + (p-1)/(p v)) times more in flight (Korthikanti Sec. 4.2.3).
    in_flight = np.where(
        lay.vpp > 1, in_flight * (1 + (lay.pp - 1) / (lay.pp * lay.vpp)), in_flight
    )
    # Offloaded checkpoints live in host memory; the GPU keeps the layer being recomputed and
    # the next one in transit (Unsloth offloaded gradient checkpointing; torchtune
    # OffloadActivations double-buffers on a side stream).
    stored_layers = np.minimum(layers, 2.0) if work.activation_offload else layers
    first_stage = per_layer * stored_layers * in_flight + working
    # The last stage holds one microbatch plus the logits.
    last_stage = per_layer * stored_layers + working + logits
    peak: np.ndarray = np.maximum(first_stage, last_stage)
    return peak


def memory_per_gpu(
    geo: Geometry, work: Workload, lay: LayoutArrays, factors: TrainingFactors
) -> MemoryArrays:
    weights, grads, optimizer = state_memory(geo, work, lay)
    activations = activation_memory(geo, work, lay)
    # The activation peak comes as the backward starts (every stored layer and the logits
    # alive); block gradients appear only once the logits and the top layer's stored
    # activations are freed, so they raise the peak only by what exceeds those (as do PyTorch
    # FSDP's gradient shards, made during the backward from the other activations freed).
    per_layer, _, logits = _layer_terms(geo, work, lay)
    freed = np.minimum(_block_grads(geo, work, lay), per_layer + logits)
    g = stage_params(geo, lay) * grad_bytes(work.precision, work.pure_bf16) / (lay.dp * lay.cp)
    grads = grads - freed - grads_absent_at_peak(work, lay, g, activations - freed)
    allocated = weights + grads + optimizer + activations
    outside = factors.outside_allocator_bytes(lay.tp * lay.pp * lay.dp * lay.cp) + 0.0 * allocated
    other = outside + factors.fragmentation_fraction * allocated  # + the allocator's slack
    return MemoryArrays(weights, grads, optimizer, activations, other, outside)
