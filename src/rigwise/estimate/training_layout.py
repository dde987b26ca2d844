"""What a training run asks for (``Workload``) and how it is laid out (``Layout``).

``LayoutArrays`` holds many layouts as numpy columns so that the estimators in
``training_memory`` and ``training_step`` evaluate one layout or a whole search space with the
same code (a single plan is an array of length one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, cast

import numpy as np

METHODS = ("pretrain", "full", "lora", "qlora")
PRECISIONS = ("bf16", "fp16", "fp8")
OPTIMIZERS = ("adamw", "adamw-8bit", "sgd", "adafactor")
RECOMPUTE = ("none", "selective", "full")  # index = code used in LayoutArrays.recompute
LORA_TARGETS = ("q", "k", "v", "o", "gate", "up", "down")


@dataclass(frozen=True)
class Workload:
    """The run: method, sizes, numerics and framework behaviour (not the layout)."""

    seq_len: int = 2048
    global_batch: int = 8  # sequences per optimizer step
    method: str = "pretrain"
    precision: str = "bf16"
    optimizer: str = "adamw"
    lora_rank: int = 16
    lora_targets: tuple[str, ...] = LORA_TARGETS
    flash_attention: bool = True  # fused attention: no s^2 activations (Dao et al. 2022)
    dropout: bool = False  # GPT-style dropout masks (Megatron GPT); Llama-family has none
    overlap_grad_reduce: bool = True  # DDP/FSDP overlap the DP reduction with backward
    fused_kernels: bool = True  # fused elementwise kernels (Megatron, torch.compile) vs eager
    async_tp: bool = False  # TP collectives overlapped with the GEMMs (AsyncTP, TE comm overlap)
    # What recompute "selective" redoes: "attention" (Megatron, Korthikanti 2022: the attention
    # core, or with fused attention the cheap elementwise ops) or "op" (torchtitan per-op SAC:
    # every second matmul of the layer and the TP all-gathers feeding them).
    selective_policy: str = "attention"
    # Whether per-op SAC saves the fused attention's output. False where its save list omits
    # the SDPA backend that runs, which is then recomputed in the backward: torchtitan puts
    # cuDNN attention first on sm100 (PR #1196, 2025-05-14) but listed only the flash and
    # efficient SDPA ops in _save_list until PR #2095 (2025-12-01; issue #2091).
    sac_saves_attention: bool = True
    float8_scaling: str = "tensorwise"  # fp8 scales: tensorwise | rowwise | mxfp8 (torchao recipes)
    offload: str = "none"  # none | optimizer | params (ZeRO-Offload / ZeRO-Infinity)
    # Pure bf16 (torchtune dtype=bf16, LitGPT bf16-true, llm-foundry PURE): bf16 weights,
    # gradients and optimizer moments, no fp32 master copy. False = mixed precision.
    pure_bf16: bool = False
    # Optimizer step applied per parameter in its gradient hook (torchtune optimizer_in_bwd):
    # no full set of gradients is ever alive.
    optimizer_in_backward: bool = False
    # Checkpointed layer inputs kept in host memory and streamed back for the backward
    # (Unsloth offloaded gradient checkpointing, torchtune enable_activation_offloading).
    activation_offload: bool = False
    # Cross-entropy computed over chunks of the sequence (torchtune CEWithChunkedOutputLoss,
    # Unsloth/Liger fused loss): the full fp32 logits are never alive at once.
    chunked_loss: bool = False
    # Cross-entropy fused with the output projection, computed tile by tile on chip (Cut
    # Cross-Entropy, Wijmans et al. 2024, arXiv:2411.09009): no logits tensor in GPU memory.
    fused_loss: bool = False
    # Cross-entropy compiled into fused kernels (torch.compile of the loss; torchtitan does it
    # with training.compile since 2025-04): no fp32 copy of the logits is ever alive.
    compiled_loss: bool = False
    # FSDP wraps the token embedding in a unit of its own, resharded after the forward
    # (torchtitan since PR #1094, 2025-07-28): only the final norm and output head stay
    # unsharded between the forward and the backward, not the embedding.
    embedding_own_unit: bool = False
    # ZeRO-3 is PyTorch FSDP (FSDP1 or FSDP2 fully_shard) with a mixed-precision policy: each
    # shard stays in the parameters' fp32 and is what the optimizer steps (no 2-byte copy),
    # and gradients, set to None by zero_grad between steps, exist only from the backward on.
    torch_fsdp: bool = False
    # QLoRA's adapter optimizer state paged to host memory under pressure (bitsandbytes
    # paged optimizers; Dettmers et al. 2023 Sec. 3).
    paged_optimizer: bool = False
    tokens: float | None = None  # amount of work, for time to train

    @property
    def trains_base(self) -> bool:
        return self.method in ("pretrain", "full")

    @property
    def state_precision(self) -> str:
        """'pure-bf16' or the mixed-precision policy of the GEMMs ('bf16', 'fp16', 'fp8')."""
        return "pure-bf16" if self.pure_bf16 else self.precision


def per_row(work: Workload, seq_len: np.ndarray, global_batch: np.ndarray) -> Workload:
    """``work`` with a sequence length and a global batch per layout (int64 arrays aligned with
    the ``LayoutArrays`` evaluated): the estimators are elementwise in these two sizes, so
    queries that differ only in them are evaluated in one call (api/train_batch.py), each row
    as its own workload alone gives it."""
    return replace(work, seq_len=cast(int, seq_len), global_batch=cast(int, global_batch))


@dataclass(frozen=True)
class Layout:
    """One parallel layout. ``dp`` counts data-parallel replicas (context-parallel excluded)."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    cp: int = 1
    ep: int = 1
    vpp: int = 1
    micro_batch: int = 1
    global_batch: int = 1
    zero: int = 0
    recompute: str = "none"
    sequence_parallel: bool = False

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp * self.cp

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class LayoutArrays:
    """Columns of candidate layouts (int64 numpy arrays of equal length)."""

    tp: np.ndarray
    pp: np.ndarray
    dp: np.ndarray
    cp: np.ndarray
    ep: np.ndarray
    vpp: np.ndarray
    micro_batch: np.ndarray
    zero: np.ndarray
    recompute: np.ndarray  # index into RECOMPUTE
    sequence_parallel: np.ndarray  # 0/1

    @classmethod
    def from_layouts(cls, layouts: list[Layout]) -> LayoutArrays:
        def column(name: str) -> np.ndarray:
            return np.array([getattr(layout, name) for layout in layouts], dtype=np.int64)

        return cls(
            tp=column("tp"),
            pp=column("pp"),
            dp=column("dp"),
            cp=column("cp"),
            ep=column("ep"),
            vpp=column("vpp"),
            micro_batch=column("micro_batch"),
            zero=column("zero"),
            recompute=np.array([RECOMPUTE.index(x.recompute) for x in layouts], dtype=np.int64),
            sequence_parallel=column("sequence_parallel"),
        )

    @classmethod
    def concat(cls, parts: Sequence[LayoutArrays]) -> LayoutArrays:
        """The rows of ``parts``, in order."""
        names = [f.name for f in fields(cls)]
        return cls(**{n: np.concatenate([getattr(p, n) for p in parts]) for n in names})

    def __len__(self) -> int:
        return int(self.tp.shape[0])

    def rows(self, start: int, stop: int) -> LayoutArrays:
        """Rows ``start`` to ``stop`` (views of these columns)."""
        return LayoutArrays(**{f.name: getattr(self, f.name)[start:stop] for f in fields(self)})

    def take(self, index: np.ndarray) -> LayoutArrays:
        return LayoutArrays(**{f.name: getattr(self, f.name)[index] for f in fields(self)})

    def layout(self, i: int, global_batch: int) -> Layout:
        return Layout(
            tp=int(self.tp[i]),
            pp=int(self.pp[i]),
            dp=int(self.dp[i]),
            cp=int(self.cp[i]),
            ep=int(self.ep[i]),
            vpp=int(self.vpp[i]),
            micro_batch=int(self.micro_batch[i]),
            global_batch=global_batch,
            zero=int(self.zero[i]),
            recompute=RECOMPUTE[int(self.recompute[i])],
            sequence_parallel=bool(self.sequence_parallel[i]),
        )


@dataclass(frozen=True)
class Geometry:
    """The shapes of one model that training arithmetic needs (from a ``ModelSpec``)."""

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int  # dense MLP width
    vocab: int
    gated: bool
    tied: bool
    params_total: float
    params_active: float
    embedding_params: float  # input embedding (+ learned positions)
    head_params: float  # untied output projection (0 when tied)
    attention_params: float  # per layer (q, k, v, o)
    mlp_params: float  # per dense layer
    expert_params: float  # one routed expert
    shared_expert_params: float  # all shared experts of one MoE layer
    experts: int
    experts_per_token: int
    moe_layers: int

    @property
    def mlp_matrices(self) -> int:
        return 3 if self.gated else 2

    @property
    def dense_layers(self) -> int:
        return self.layers - self.moe_layers

    def layer_params_total(self) -> float:
        """Mean parameters of one transformer layer (all experts), without embeddings."""
        return (self.params_total - self.embedding_params - self.head_params) / self.layers

    def layer_gemm_params_active(self) -> float:
        """Mean parameters one token meets in one layer: 2 FLOPs each per forward pass."""
        moe = self.moe_layers * (
            self.experts_per_token * self.expert_params + self.shared_expert_params
        )
        dense = self.dense_layers * self.mlp_params
        return self.attention_params + (moe + dense) / self.layers


def geometry(spec: Any) -> Geometry:
    """Shapes of a ``rigwise.models.ModelSpec``; GQA and SwiGLU are read from the spec."""
    h, d = spec.hidden_size, spec.head_dim
    attention = float(h * d * (2 * spec.num_attention_heads + 2 * spec.num_kv_heads))
    gated = bool(getattr(spec, "gated_mlp", True))
    mats = 3 if gated else 2
    moe = getattr(spec, "moe", None)
    tied = bool(spec.tie_word_embeddings)
    head = float(getattr(spec, "params_lm_head", 0) or (0 if tied else spec.vocab_size * h))
    embedding = float(spec.params_embedding + getattr(spec, "params_positions", 0))
    if moe is not None:
        moe_layers = moe.num_moe_layers or spec.num_layers
        expert = float(moe.params_per_expert or mats * h * moe.expert_intermediate_size)
        shared = float(mats * h * moe.shared_intermediate_size * max(moe.num_shared_experts, 1))
        shared = shared if moe.num_shared_experts else 0.0
        experts, top_k = moe.num_experts, moe.experts_per_token
    else:
        moe_layers, expert, shared, experts, top_k = 0, 0.0, 0.0, 1, 1
    mlp = float(mats * h * spec.intermediate_size)
    if getattr(spec, "mla", None) is not None:
        # MLA projections are low-rank; take what the exact parameter count leaves per layer.
        moe_total = moe_layers * (experts * expert + shared)
        rest = (
            spec.params_total - embedding - head - moe_total - (spec.num_layers - moe_layers) * mlp
        )
        attention = max(rest / spec.num_layers, 0.0)
    return Geometry(
        layers=spec.num_layers,
        hidden=h,
        heads=spec.num_attention_heads,
        kv_heads=spec.num_kv_heads,
        head_dim=d,
        ffn=spec.intermediate_size,
        vocab=spec.vocab_size,
        gated=gated,
        tied=tied,
        params_total=float(spec.params_total),
        params_active=float(spec.params_active),
        embedding_params=embedding,
        head_params=head,
        attention_params=attention,
        mlp_params=mlp,
        expert_params=expert,
        shared_expert_params=shared,
        experts=experts,
        experts_per_token=top_k,
        moe_layers=moe_layers,
    )
