"""`rigwise train MODEL --on HW ...`: memory, step time, time and cost of a training run."""

from __future__ import annotations

from typing import Any

import click

from rigwise.cli._common import apply_rig, finish, rig_option, run_queries

_LAYOUT_INTS = ("tp", "pp", "dp", "cp", "ep", "vpp")


def _options(func: Any) -> Any:
    options = [
        click.option(
            "--on", "on", help="Hardware: 'dgx-h100', '8x h100-sxm', '2x rtx-3090+nvlink'."
        ),
        click.option("--nodes", type=int, default=1, show_default=True, help="Machines like --on."),
        click.option("--network", help="Link between nodes: ib-ndr, roce-400, 100gbe, ..."),
        click.option(
            "--cluster", type=click.Path(dir_okay=False), help="Cluster YAML instead of --on."
        ),
        rig_option,
        click.option(
            "--method",
            type=click.Choice(["pretrain", "full", "lora", "qlora"]),
            default="pretrain",
            show_default=True,
        ),
        click.option(
            "--precision",
            type=click.Choice(["bf16", "fp16", "fp8"]),
            default="bf16",
            show_default=True,
        ),
        click.option(
            "--optimizer",
            type=click.Choice(["adamw", "adamw-8bit", "sgd", "adafactor"]),
            default="adamw",
            show_default=True,
        ),
        click.option("--seq", default="2048", show_default=True, help="Sequence length (tokens)."),
        click.option("--global-batch", help="Sequences per optimizer step."),
        click.option("--micro-batch", type=int, help="Sequences per microbatch per replica."),
        click.option("--tokens", help="Tokens to train on (e.g. 2T)."),
        click.option("--steps", type=int, help="Optimizer steps (instead of --tokens)."),
        click.option("--epochs", type=float, help="Epochs over --dataset-tokens."),
        click.option("--dataset-tokens", help="Dataset size in tokens (with --epochs)."),
        *[
            click.option(
                f"--{name}", type=int, help=f"{name.upper()} degree (fixed during --search)."
            )
            for name in _LAYOUT_INTS
        ],
        click.option(
            "--sequence-parallel/--no-sequence-parallel",
            default=None,
            help="Megatron sequence parallelism.",
        ),
        click.option("--zero", type=click.IntRange(0, 3), help="ZeRO stage (3 = FSDP)."),
        click.option("--recompute", type=click.Choice(["none", "selective", "full"])),
        click.option(
            "--offload",
            type=click.Choice(["none", "optimizer", "params"]),
            default="none",
            show_default=True,
        ),
        click.option("--lora-rank", type=int, default=16, show_default=True),
        click.option("--flash-attention/--no-flash-attention", default=True, show_default=True),
        click.option(
            "--compile/--eager",
            default=True,
            show_default=True,
            help="Fused elementwise kernels (torch.compile, Megatron) or eager PyTorch.",
        ),
        click.option(
            "--float8-scaling",
            type=click.Choice(["tensorwise", "rowwise"]),
            default="tensorwise",
            show_default=True,
            help="Float8 scales with --precision fp8 (torchao recipes; rowwise is slower).",
        ),
        click.option(
            "--async-tp",
            is_flag=True,
            help="Overlap tensor-parallel collectives with the matmuls (AsyncTP).",
        ),
        click.option(
            "--search", is_flag=True, help="Find the best layout (fixed flags stay fixed)."
        ),
        click.option(
            "--top", type=int, default=1, show_default=True, help="With --search: list N layouts."
        ),
        click.option(
            "--objective",
            type=click.Choice(["time", "cost", "energy"]),
            default="time",
            show_default=True,
        ),
        click.option(
            "--price", type=float, help="USD per GPU-hour (default: catalog rental price)."
        ),
        click.option(
            "--power-limit", type=float, help="Board power cap in watts (nvidia-smi -pl)."
        ),
        click.option(
            "--queries",
            type=click.Path(allow_dash=True),
            help="JSONL of option objects ('-' for stdin); one result per line.",
        ),
        click.option("--json", "as_json", is_flag=True, help="Print the result as JSON."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


@click.command()
@click.argument("model", required=False)
@_options
def train(model: str | None, queries: str | None, as_json: bool, **options: Any) -> int:
    """Plan a training or fine-tuning run of MODEL on hardware: memory per GPU, step time,
    throughput, MFU, time to train, GPU-hours, energy and cost; --search finds the layout."""
    from rigwise.api.train import plan_training

    if queries:
        return run_queries(queries, plan_training)
    if not model:
        raise click.UsageError("Give a MODEL (e.g. llama-3.1-8b) or --queries FILE.jsonl.")
    given = {key: value for key, value in apply_rig(options).items() if value is not None}
    return finish(plan_training(model=model, **given), as_json, _render)


def _render(plan: Any) -> None:
    from rigwise.units import format_bytes, format_count, format_seconds

    echo = click.echo
    data = plan.to_dict()
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
    if plan.memory_per_gpu is not None:
        mem = plan.memory_per_gpu.to_dict()
        parts = ", ".join(
            f"{k.removesuffix('_bytes')} {format_bytes(v)}"
            for k, v in mem.items()
            if k not in ("total_bytes", "capacity_bytes")
        )
        ranged = _range((data["memory_per_gpu"] or {}).get("total_bytes_interval"), format_bytes)
        echo(
            f"memory per GPU: {format_bytes(mem['total_bytes'])}{ranged} of "
            f"{format_bytes(mem['capacity_bytes'])} ({parts})"
        )
    if plan.step is not None:
        step = plan.step.to_dict()
        busy = sorted(((v, k) for k, v in step.items() if k.endswith("_s") and v > 0), reverse=True)
        ranged = _range((data["step"] or {}).get("seconds_interval"), format_seconds)
        echo(
            f"step: {format_seconds(step['seconds'])}{ranged} = "
            + " + ".join(f"{k.removesuffix('_s')} {format_seconds(v)}" for v, k in busy)
        )
        ranged = _range(data.get("tokens_per_s_interval"), format_count)
        echo(
            f"throughput: {format_count(plan.tokens_per_s)}{ranged} tokens/s, "
            f"{plan.model_tflops_per_gpu:.0f} TFLOP/s per GPU, "
            f"MFU {plan.mfu:.1%}, HFU {plan.hfu:.1%}"
        )
    if plan.time_to_train_s is not None:
        cost = f", ${plan.cost_usd:,.0f}" if plan.cost_usd is not None else ""
        ranged = _range(data.get("time_to_train_s_interval"), format_seconds)
        echo(
            f"to train: {format_seconds(plan.time_to_train_s)}{ranged}, "
            f"{plan.gpu_hours:,.0f} GPU-hours, "
            f"{plan.energy_kwh:,.0f} kWh{cost}"
        )
    if plan.search is not None:
        s = plan.search
        pruned = ", ".join(f"{n} {reason}" for reason, n in s["pruned"].items())
        echo(
            f"search: {s['generated']} layouts in {s['seconds'] * 1e3:.0f} ms, "
            f"{s['feasible']} feasible; pruned: {pruned}"
        )
    for rank, alt in enumerate(plan.alternatives, start=2):
        lay = alt.layout
        echo(
            f"#{rank}: tp={lay.tp} pp={lay.pp} dp={lay.dp} cp={lay.cp} vpp={lay.vpp} "
            f"mb={lay.micro_batch} zero={lay.zero} recompute={lay.recompute}: "
            f"step {format_seconds(alt.step.seconds)}, MFU {alt.mfu:.1%}"
        )
    for note in plan.notes:
        echo(f"note: {note}")
    if data.get("intervals"):
        echo(
            "ranges: P10-P90 of what comparable independent runs gave "
            + "(`rigwise validate intervals`)"
        )
        for entry in data["intervals"].values():
            for note in entry["notes"]:
                echo(f"  range widened: {note}")


def _range(bounds: list[float] | None, fmt: Any) -> str:
    return f" ({fmt(bounds[0])}-{fmt(bounds[1])})" if bounds else ""
