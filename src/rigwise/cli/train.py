"""`rigwise train MODEL --on HW ...`: memory, step time, time and cost of a training run."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from rigwise.cli._common import apply_rig, finish, rig_option
from rigwise.cli.fields import TRAIN_FIELDS_EXAMPLE, fields_help, fields_of, fields_option
from rigwise.cli.queries import run_queries

if TYPE_CHECKING:
    from rigwise.plans import TrainingPlan

_LAYOUT_INTS = ("tp", "pp", "dp", "cp", "ep", "vpp")


# Where it runs.
_HARDWARE = (
    click.option("--on", "on", help="Hardware: 'dgx-h100', '8x h100-sxm', '2x rtx-3090+nvlink'."),
    click.option("--nodes", type=int, default=1, show_default=True, help="Machines like --on."),
    click.option("--network", help="Link between nodes: ib-ndr, roce-400, 100gbe, ..."),
    click.option(
        "--cluster", type=click.Path(dir_okay=False), help="Cluster YAML instead of --on."
    ),
    rig_option,
)

# What is trained, in what precision and with which optimizer.
_WHAT = (
    click.option(
        "--method",
        type=click.Choice(["pretrain", "full", "lora", "qlora"]),
        default="pretrain",
        show_default=True,
        help="What is trained: pretraining, full fine-tune, LoRA or QLoRA.",
    ),
    click.option(
        "--framework",
        help="Take a framework's defaults (explicit flags win): torchtune, unsloth, "
        "hf-trainer, axolotl, litgpt, deepspeed, megatron, nemo, torchtitan.",
    ),
    click.option(
        "--precision",
        type=click.Choice(["bf16", "fp16", "fp8"]),
        help="GEMM precision (default bf16).",
    ),
    click.option(
        "--pure-bf16/--mixed-precision",
        default=None,
        help="bf16 weights, gradients and optimizer state without fp32 master weights "
        "(torchtune, LitGPT bf16-true), or mixed precision (default).",
    ),
    click.option(
        "--optimizer",
        type=click.Choice(["adamw", "adamw-8bit", "sgd", "adafactor"]),
        help="Optimizer (default adamw).",
    ),
    click.option(
        "--optimizer-in-backward/--no-optimizer-in-backward",
        default=None,
        help="Step each parameter in its gradient hook: no full set of gradients "
        "(torchtune optimizer_in_bwd).",
    ),
    click.option(
        "--paged-optimizer/--no-paged-optimizer",
        default=None,
        help="Optimizer state paged to host memory under pressure (default: on for qlora).",
    ),
)

# Sequence, batch and how much to train.
_AMOUNT = (
    click.option(
        "--seq",
        default="2048",
        show_default=True,
        help="Sequence length (tokens), or 'max' for the longest that fits.",
    ),
    click.option("--global-batch", help="Sequences per optimizer step."),
    click.option("--micro-batch", type=int, help="Sequences per microbatch per replica."),
    click.option("--tokens", help="Tokens to train on (e.g. 2T)."),
    click.option("--steps", type=int, help="Optimizer steps (instead of --tokens)."),
    click.option("--epochs", type=float, help="Epochs over --dataset-tokens."),
    click.option("--dataset-tokens", help="Dataset size in tokens (with --epochs)."),
)

# The parallel layout and what it keeps in memory.
_LAYOUT = (
    *[
        click.option(f"--{name}", type=int, help=f"{name.upper()} degree (fixed during --search).")
        for name in _LAYOUT_INTS
    ],
    click.option(
        "--sequence-parallel/--no-sequence-parallel",
        default=None,
        help="Megatron sequence parallelism.",
    ),
    click.option("--zero", type=click.IntRange(0, 3), help="ZeRO stage (3 = FSDP)."),
    click.option(
        "--recompute",
        type=click.Choice(["none", "selective", "full"]),
        help="Activation recompute (default none; full for lora/qlora).",
    ),
    click.option(
        "--selective-policy",
        type=click.Choice(["attention", "op"]),
        help="What selective recompute redoes: the attention core (Megatron, default) "
        "or every second matmul (torchtitan per-op SAC).",
    ),
    click.option(
        "--activation-offload/--no-activation-offload",
        default=None,
        help="Keep checkpointed activations in host memory (Unsloth offloaded gradient "
        "checkpointing).",
    ),
    click.option(
        "--chunked-loss/--no-chunked-loss",
        default=None,
        help="Cross-entropy over chunks: the fp32 logits are never all alive.",
    ),
    click.option(
        "--offload",
        type=click.Choice(["none", "optimizer", "params"]),
        help="ZeRO-Offload of the optimizer (and parameters) to the host (default none).",
    ),
    click.option("--lora-rank", type=int, help="LoRA rank (default 16)."),
    click.option(
        "--lora-targets",
        help="Comma-separated LoRA targets of q,k,v,o,gate,up,down (default all).",
    ),
)

# Kernels and overlap.
_KERNELS = (
    click.option(
        "--flash-attention/--no-flash-attention",
        default=None,
        help="Fused attention (default on).",
    ),
    click.option(
        "--compile/--eager",
        default=None,
        help="Fused elementwise kernels (torch.compile, Megatron; default) or eager PyTorch.",
    ),
    click.option(
        "--float8-scaling",
        type=click.Choice(["tensorwise", "rowwise", "mxfp8"]),
        help="Float8 scales with --precision fp8 (torchao recipes; rowwise is slower; mxfp8 = "
        "1x32 block scales on Blackwell, all-gathers in bf16; default tensorwise).",
    ),
    click.option(
        "--async-tp",
        is_flag=True,
        default=None,
        help="Overlap tensor-parallel collectives with the matmuls (AsyncTP).",
    ),
    click.option(
        "--tp-comm-overlap",
        is_flag=True,
        default=None,
        help="Overlap tensor-parallel communication with GEMMs (Transformer Engine).",
    ),
    click.option(
        "--overlap-grad-reduce/--no-overlap-grad-reduce",
        default=None,
        help="Overlap the data-parallel gradient reduction with the backward (default on).",
    ),
    click.option(
        "--dropout/--no-dropout",
        default=None,
        help="Dropout masks (default: on for GPT-style models, off for Llama-style).",
    ),
)

# The layout search, cost and output.
_SEARCH = (
    click.option("--search", is_flag=True, help="Find the best layout (fixed flags stay fixed)."),
    click.option(
        "--top", type=int, default=1, show_default=True, help="With --search: list N layouts."
    ),
    click.option(
        "--objective",
        type=click.Choice(["time", "cost", "energy"]),
        default="time",
        show_default=True,
        help="With --search: what the best layout minimises.",
    ),
    click.option(
        "--allow-fewer-gpus",
        is_flag=True,
        default=None,
        help="Let --objective cost/energy leave some of the GPUs idle.",
    ),
    click.option(
        "--goodput",
        type=click.FloatRange(0.0, 1.0, min_open=True),
        help="Share of wall-clock time that trains (default 0.9, Llama 3 paper).",
    ),
    click.option("--price", type=float, help="USD per GPU-hour (default: catalog rental price)."),
    click.option("--power-limit", type=float, help="Board power cap in watts (nvidia-smi -pl)."),
    click.option(
        "--queries",
        type=click.Path(allow_dash=True),
        help="JSONL of option objects ('-' for stdin); one result per line.",
    ),
    click.option("--json", "as_json", is_flag=True, help="Print the result as JSON."),
    fields_option(fields_help(TRAIN_FIELDS_EXAMPLE)),
)


def _options(func: Any) -> Any:
    """Apply every option, in the order ``--help`` lists them."""
    for option in reversed((*_HARDWARE, *_WHAT, *_AMOUNT, *_LAYOUT, *_KERNELS, *_SEARCH)):
        func = option(func)
    return func


@click.command()
@click.argument("model", required=False)
@_options
def train(
    model: str | None, queries: str | None, as_json: bool, fields: str | None, **options: Any
) -> int:
    """Plan a training or fine-tuning run of MODEL on hardware: memory per GPU, step time,
    throughput, MFU, time to train, GPU-hours, energy and cost; --search finds the layout."""
    from rigwise.api.train import plan_training
    from rigwise.plans import TrainingPlan

    selected = fields_of(fields, TrainingPlan, "train", as_json=as_json, queries=bool(queries))
    if queries:
        from rigwise.api.train_batch import plan_training_batch

        return run_queries(queries, plan_training, plan_training_batch, selected)
    if not model:
        raise click.UsageError("Give a MODEL (e.g. llama-3.1-8b) or --queries FILE.jsonl.")
    given = {key: value for key, value in apply_rig(options).items() if value is not None}
    if "lora_targets" in given:
        given["lora_targets"] = tuple(t.strip() for t in given["lora_targets"].split(",") if t)
    return finish(plan_training(model=model, **given), as_json, _render, selected)


def _render_memory(plan: TrainingPlan, data: dict[str, Any]) -> None:
    from rigwise.units import format_bytes

    if plan.memory_per_gpu is None:
        return
    mem = plan.memory_per_gpu
    named = (
        ("weights", mem.weights_bytes),
        ("gradients", mem.gradients_bytes),
        ("optimizer", mem.optimizer_bytes),
        ("activations", mem.activations_bytes),
        ("other", mem.other_bytes),
    )
    parts = ", ".join(f"{k} {format_bytes(v)}" for k, v in named)
    ranged = _range((data["memory_per_gpu"] or {}).get("total_bytes_interval"), format_bytes)
    click.echo(
        f"memory per GPU: {format_bytes(mem.total_bytes)}{ranged} of "
        f"{format_bytes(mem.capacity_bytes)} ({parts})"
    )


def _render_speed(plan: TrainingPlan, data: dict[str, Any]) -> None:
    """Step time, throughput and the whole run's time, GPU-hours, energy and cost."""
    from rigwise.units import format_count, format_seconds

    if plan.step is not None:
        step = plan.step
        busy = sorted(((v, k) for k, v in step.parts.items() if v > 0), reverse=True)
        ranged = _range((data["step"] or {}).get("seconds_interval"), format_seconds, step.seconds)
        click.echo(
            f"step: {format_seconds(step.seconds)}{ranged} = "
            + " + ".join(f"{k.removesuffix('_s')} {format_seconds(v)}" for v, k in busy)
        )
        ranged = _range(
            data.get("tokens_per_s_interval"), format_count, plan.tokens_per_s, rate=True
        )
        click.echo(
            f"throughput: {format_count(plan.tokens_per_s)}{ranged} tokens/s, "
            f"{plan.model_tflops_per_gpu:.0f} TFLOP/s per GPU, "
            f"MFU {plan.mfu:.1%}, HFU {plan.hfu:.1%}"
        )
    if plan.fits and plan.time_to_train_s is not None:
        cost = f", ${plan.cost_usd:,.0f}" if plan.cost_usd is not None else ""
        ranged = _range(data.get("time_to_train_s_interval"), format_seconds, plan.time_to_train_s)
        click.echo(
            f"to train: {format_seconds(plan.time_to_train_s)}{ranged}, "
            f"{plan.gpu_hours:,.0f} GPU-hours, "
            f"{plan.energy_kwh:,.1f} kWh{cost} (goodput {plan.goodput:.0%}, "
            f"{plan.power_watts_per_gpu:.0f} W per GPU)"
        )


def _render_search(plan: TrainingPlan) -> None:
    from rigwise.units import format_seconds

    if plan.search is not None:
        s = plan.search
        pruned = ", ".join(f"{n} {reason}" for reason, n in s.pruned.items())
        click.echo(
            f"search: {s.generated} layouts in {s.seconds * 1e3:.0f} ms, "
            f"{s.feasible} feasible; pruned: {pruned}"
        )
    for rank, alt in enumerate(plan.alternatives, start=2):
        lay = alt.layout
        if lay is None or alt.step is None:  # alternatives are searched layouts that fit
            continue
        click.echo(
            f"#{rank}: tp={lay.tp} pp={lay.pp} dp={lay.dp} cp={lay.cp} vpp={lay.vpp} "
            f"mb={lay.micro_batch} zero={lay.zero} recompute={lay.recompute}: "
            f"step {format_seconds(alt.step.seconds)}, MFU {alt.mfu:.1%}"
        )


def _render(plan: TrainingPlan) -> None:
    echo = click.echo
    from rigwise.serialize import to_jsonable

    data = to_jsonable(plan)  # the JSON carries the P10-P90 ranges
    echo(f"{plan.model} on {plan.gpus}x {plan.accelerator}")
    if plan.layout is not None:
        lay = plan.layout
        echo(
            f"layout: tp={lay.tp} pp={lay.pp} dp={lay.dp} cp={lay.cp} ep={lay.ep} vpp={lay.vpp} "
            f"micro-batch={lay.micro_batch} global-batch={lay.global_batch} zero={lay.zero} "
            f"recompute={lay.recompute} sp={'on' if lay.sequence_parallel else 'off'}"
        )
    if not plan.fits:
        echo(f"does not fit: {plan.reason}")
    _render_memory(plan, data)
    _render_speed(plan, data)
    _render_search(plan)
    for note in plan.notes:
        echo(f"note: {note}")
    if data.get("intervals"):
        echo(
            "ranges: P10-P90 of what comparable independent runs gave "
            + "(`rigwise validate intervals`)"
        )
        for quantity, entry in data["intervals"].items():
            for note in entry["notes"]:
                echo(f"  range widened: {note}")
            if entry.get("interval_note"):
                echo(f"  {quantity}: {entry['interval_note']}")


def _range(
    bounds: list[float] | None, fmt: Any, value: float | None = None, rate: bool = False
) -> str:
    """`` (a-b)``; with the ``value`` it ranges (a time unless ``rate``), a range wholly on one
    side says so (estimate/plan_intervals.py ``interval_text``)."""
    from rigwise.estimate.plan_intervals import interval_text

    return interval_text(bounds, fmt, value, time=not rate)
