"""`rigwise fit [--on HW]`: what runs on this hardware? Every catalog model, ranked."""

from __future__ import annotations

from typing import Any

import click

from rigwise.cli._common import EXIT_INFEASIBLE, EXIT_OK, apply_rig, console, print_json, rig_option


@click.command("fit")
@click.option("--on", "on", help="Hardware, e.g. 'rtx-3090', '2x rtx-3090'; default: this machine.")
@rig_option
@click.option(
    "--use",
    type=click.Choice(["chat", "code", "reasoning", "vision", "embedding", "text", "benchmark"]),
    help="Only models tagged with this use (catalog/data/model_uses.csv).",
)
@click.option(
    "--min-tps", type=float, help="Decode tokens/s a model must reach to count as running."
)
@click.option("--context", help="Context to fit, e.g. 8k (default 4096, capped at each model's).")
@click.option("--engine", help="llama.cpp, vllm, sglang, tensorrt-llm, transformers, mlx, ollama.")
@click.option("--benchmarks", is_flag=True, help="Include training-benchmark configs (no weights).")
@click.option("--limit", type=int, default=0, help="Show only the first N rows (text output).")
@click.option("--json", "as_json", is_flag=True, help="Print the ranking as JSON.")
def fit(as_json: bool, limit: int, **kwargs: Any) -> int:
    """Which catalog models run on the hardware: best quant, largest context, speed, lever.

    Exit 1 when no model runs."""
    from rigwise.api.fit import fit_models

    options = apply_rig({k: v for k, v in kwargs.items() if v is not None})
    report = fit_models(**options)
    if as_json:
        print_json(report)
    else:
        render(report, limit)
    return EXIT_OK if report.runs else EXIT_INFEASIBLE


def _rate(value: float | None, band: Any = None) -> str:
    if value is None:
        return "-"
    digits = ",.1f" if value < 100 else ",.0f"
    text = f"{value:{digits}}"
    return text + (f" ({band[0]:{digits}}-{band[1]:{digits}})" if band else "")


def render(report: Any, limit: int = 0) -> None:
    from rich.table import Table

    from rigwise.units import format_bytes

    out = console()
    out.print(
        f"[bold]{report.hardware}[/] ({report.engine}, context {report.context:,}): "
        f"{len(report.runs)} of {len(report.models)} models run; "
        f"ranked in {report.seconds * 1000:,.0f} ms"
    )
    table = Table("model", "uses", "status", "quant", "max context", "decode tok/s",
                  "prefill tok/s", "memory", "lever")  # fmt: skip
    colours = {"runs": "green", "too slow": "yellow"}
    rows = report.models[:limit] if limit > 0 else report.models
    for m in rows:
        quant = f"{m.quant} (native)" if m.native else m.quant
        table.add_row(
            m.model, ",".join(m.uses), f"[{colours.get(m.status, 'red')}]{m.status}[/]", quant,
            f"{m.max_context:,}" if m.max_context else "-",
            _rate(m.decode_tokens_per_s, m.decode_tokens_per_s_interval),
            _rate(m.prefill_tokens_per_s, m.prefill_tokens_per_s_interval),
            f"{format_bytes(m.memory_bytes)} / {format_bytes(m.capacity_bytes)}", m.lever,
        )  # fmt: skip
    out.print(table)
    for note in report.notes:
        out.print(f"note: {note}")


__all__ = ["fit", "render"]
