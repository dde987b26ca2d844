"""``TrainOptions``: the options of ``rigwise train`` and ``plan_training``, one field each.

Typed and frozen, validated by pydantic at this edge and shared by the CLI, ``--queries``, the
web API, the grid's jobs and the build designer; each field is documented where it is
declared, so adding an option is one field and its docstring line.
"""

from __future__ import annotations

import functools
import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from rigwise.errors import InputError
from rigwise.option_fields import Hook, no_blank, no_flag, number_not_flag, takes_text
from rigwise.units import parse_count, whole_count

# Upper bounds that keep a plan's integer arithmetic exact (numpy int64 layouts): tokens per step
# (sequences x tokens each) stay below 2^53, where a float count is exact, and a layout's product
# of sizes far from overflow. Each is far past any real run: 67M sequences a step, 67M-token
# sequences, a million-way split of one kind.
MAX_SIZE = 2**26
MAX_SPLIT = 2**20
MAX_STEPS = 2**53  # as the CLI's --steps: steps x tokens per step stay a finite float


class TrainOptions(BaseModel):
    """The options of ``rigwise train`` (long option names with ``_``); unknown keys are an
    error naming the key. Counts accept '2T'-style strings."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    model: str
    """Catalog name or HF config.json."""
    on: str | None = None
    """One node: 'rtx-4090', '8x h100-sxm', 'dgx-h100'."""
    nodes: int = Field(1, ge=1, le=1_000_000)
    """Number of such nodes (with ``network``)."""
    network: str | None = None
    """Link between nodes: infiniband-ndr, roce-400g, 100gbe ..."""
    cluster: str | None = None
    """Cluster YAML file (identical accelerators) instead of ``on``."""
    method: Literal["pretrain", "full", "lora", "qlora"] = "pretrain"
    """What is trained: pretraining, full fine-tune, LoRA or QLoRA."""
    framework: str | None = None
    """Framework preset (torchtune, unsloth, deepspeed ...): its defaults fill options not given."""
    precision: Literal["bf16", "fp16", "fp8"] = "bf16"
    """Compute precision of the matmuls."""
    optimizer: Literal["adamw", "adamw-8bit", "sgd", "adafactor"] = "adamw"
    """Optimizer (sets the optimizer state per parameter)."""
    seq: int | Literal["max"] = Field(2048)
    """Sequence length in tokens, or 'max' (the longest that fits)."""
    global_batch: int | None = Field(None, ge=1, le=MAX_SIZE)
    """Sequences per optimizer step (default: one micro-batch per data-parallel rank)."""
    micro_batch: int | None = Field(None, ge=1, le=MAX_SIZE)
    """Sequences per GPU per forward/backward pass."""
    tokens: float | None = Field(None, gt=0)
    """Tokens to train on (for time, GPU-hours, energy and cost)."""
    steps: int | None = Field(None, ge=1, le=MAX_STEPS)
    """Optimizer steps to train (instead of ``tokens``)."""
    epochs: float | None = Field(None, gt=0)
    """Epochs over ``dataset_tokens`` (instead of ``tokens``)."""
    dataset_tokens: float | None = Field(None, gt=0)
    """Tokens in the dataset (with ``epochs``)."""
    tp: int | None = Field(None, ge=1, le=MAX_SPLIT)
    """Tensor-parallel size."""
    pp: int | None = Field(None, ge=1, le=MAX_SPLIT)
    """Pipeline-parallel stages."""
    dp: int | None = Field(None, ge=1, le=MAX_SPLIT)
    """Data-parallel replicas (default: the GPUs left)."""
    cp: int | None = Field(None, ge=1, le=MAX_SPLIT)
    """Context-parallel size."""
    ep: int | None = Field(None, ge=1, le=MAX_SPLIT)
    """Expert-parallel size (MoE models)."""
    vpp: int | None = Field(None, ge=1, le=MAX_SPLIT)
    """Virtual pipeline stages per rank (interleaved schedule)."""
    sequence_parallel: bool | None = None
    """Megatron sequence parallelism (default: on with tp > 1)."""
    zero: Literal[0, 1, 2, 3] | None = None
    """ZeRO / FSDP sharding stage."""
    recompute: Literal["none", "selective", "full"] | None = None
    """Activation recomputation (default: full for LoRA/QLoRA, else none)."""
    offload: Literal["none", "optimizer", "params"] = "none"
    """CPU offload of the optimizer state or the parameters."""
    lora_rank: int = Field(16, ge=1, le=MAX_SPLIT)
    """LoRA rank."""
    lora_targets: tuple[Literal["q", "k", "v", "o", "gate", "up", "down"], ...] = (
        "q",
        "k",
        "v",
        "o",
        "gate",
        "up",
        "down",
    )
    """Projections LoRA adapts."""
    pure_bf16: bool = False
    """bf16 weights, gradients and optimizer state without fp32 master weights."""
    optimizer_in_backward: bool = False
    """Each parameter stepped in its gradient hook (only one gradient alive)."""
    activation_offload: bool = False
    """Activation checkpoints kept in host memory (Unsloth-style)."""
    chunked_loss: bool = False
    """Chunked cross-entropy (no full logits tensor)."""
    fused_loss: bool = False
    """Cross-entropy fused with the output projection (Cut Cross-Entropy: no logits kept)."""
    embedding_own_unit: bool = False
    """FSDP wraps the embedding in its own unit, resharded after the forward (torchtitan)."""
    torch_fsdp: bool = False
    """ZeRO-3 by PyTorch FSDP: fp32 shards are the master weights; gradients freed per step."""
    paged_optimizer: bool | None = None
    """Optimizer state paged to host memory (default: on for qlora)."""
    selective_policy: Literal["attention", "op"] = "attention"
    """What selective recomputation recomputes."""
    flash_attention: bool = True
    """FlashAttention (no materialised attention scores)."""
    compile: bool = True
    """Fused elementwise kernels (torch.compile, Megatron); False = eager."""
    float8_scaling: Literal["tensorwise", "rowwise", "mxfp8"] = "tensorwise"
    """FP8 scaling granularity (with precision fp8); mxfp8 = 1x32 block scales (Blackwell)."""
    async_tp: bool = False
    """TP collectives overlapped with the matmuls (AsyncTP)."""
    tp_comm_overlap: bool = False
    """TP overlap as Transformer Engine userbuffers do it."""
    dropout: bool | None = None
    """Dropout on (default: the model's own setting)."""
    overlap_grad_reduce: bool = True
    """Data-parallel gradient reduction overlapped with the backward pass."""
    search: bool = False
    """Find the best layout (fixed layout options stay fixed)."""
    top: int = Field(1, ge=1, le=100)
    """With ``search``: how many layouts to return."""
    objective: Literal["time", "cost", "energy"] = "time"
    """With ``search``: what the best layout minimises."""
    allow_fewer_gpus: bool = False
    """Let ``objective`` cost/energy leave GPUs idle."""
    goodput: float | None = Field(None, gt=0, le=1)
    """Share of wall time spent training (default 0.9, Llama 3)."""
    price: float | None = Field(None, ge=0, le=1_000_000)
    """USD per GPU-hour (default: the catalog's rental price)."""
    power_limit: float | None = Field(None, gt=0)
    """GPU power cap in watts."""
    calibration: dict[str, float] | None = None
    """Measured efficiency factors (``rigwise bench``) replacing the catalog's."""

    @field_validator("*", mode="before")
    @classmethod
    def _no_flags(cls, value: object, info: ValidationInfo) -> object:
        hook = _field_hook(cls, info.field_name or "")
        return value if hook is None else hook(value)

    @field_validator("seq", "global_batch", "steps", mode="before")
    @classmethod
    def _int_counts(cls, value: object, info: ValidationInfo) -> object:
        if info.field_name == "seq" and isinstance(value, str) and value.strip().lower() == "max":
            return "max"  # only seq has a 'max'; the others say what to write
        return whole_count(value, "2048 or 4k") if isinstance(value, str) else value

    @field_validator("seq")
    @classmethod
    def _positive_seq(cls, value: int | str) -> int | str:
        if isinstance(value, int) and not 1 <= value <= MAX_SIZE:
            raise ValueError(f"seq must be 1 to {MAX_SIZE:,} tokens, or 'max'")
        return value

    @field_validator("tokens", "dataset_tokens", mode="before")
    @classmethod
    def _counts(cls, value: object) -> object:
        return parse_count(value) if isinstance(value, str) else value


def tokens_to_train(opts: TrainOptions, tokens_per_step: int) -> float | None:
    """The tokens the run trains on: ``tokens``, ``steps`` x tokens per step, or ``epochs`` x
    ``dataset_tokens``; None when none is given. They are three ways to say one amount (docs/
    train.md), so two of them, or a dataset size without epochs, would be one option silently
    dropped: bad input."""
    given = [
        f"--{name.replace('_', '-')}"
        for name in ("tokens", "steps", "epochs")
        if getattr(opts, name) is not None
    ]
    if len(given) > 1:
        raise InputError(
            f"{' and '.join(given)} each say how much to train; give one.",
            hint="Use --tokens N, --steps N or --epochs E --dataset-tokens N.",
        )
    if opts.dataset_tokens is not None and opts.epochs is None:
        raise InputError(
            "--dataset-tokens needs --epochs.", hint="Add --epochs 1 (or use --tokens alone)."
        )
    if opts.steps is not None:
        return float(opts.steps * tokens_per_step)
    if opts.epochs is None:
        return opts.tokens
    if opts.dataset_tokens is None:
        raise InputError("--epochs needs --dataset-tokens.", hint="Add --dataset-tokens 1B.")
    tokens = opts.epochs * opts.dataset_tokens
    if not math.isfinite(tokens):  # each finite, the product past a float: no time to train
        raise InputError(
            f"--epochs {opts.epochs:g} x --dataset-tokens {opts.dataset_tokens:g} is more "
            "tokens than a number holds.",
            hint="Give the dataset's real size, e.g. --dataset-tokens 1B --epochs 3.",
        )
    return tokens


@functools.lru_cache(maxsize=256)
def _field_hook(cls: type[BaseModel], name: str) -> Hook | None:
    """The check of field ``name`` before pydantic's, read from its annotation once per field
    (a sweep validates thousands of options objects)."""
    hint = cls.model_fields[name].annotation
    if number_not_flag(hint):
        return no_flag(None)  # pydantic reads true as 1: {"seq": true} was 1 token
    if takes_text(hint):
        return no_blank(None)  # {"network": ""} was no network given
    return None


__all__ = ["TrainOptions", "tokens_to_train"]
