"""`rigwise bench import FILE`: llama-bench / Ollama timings into the calibration store."""

from __future__ import annotations

from pathlib import Path

import click

from rigwise.cli._common import print_json


@click.command("import")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--model", required=True, help="Catalog model the file measured (llama-3.1-8b).")
@click.option("--on", "on", help="Device it ran on (default: the file's gpu_info, if known).")
@click.option("--quant", help="Weights format (default: from the file's model_type, or Q4_K_M).")
@click.option("--no-save", is_flag=True, help="Show what would be stored; store nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the import as JSON.")
def bench_import(
    file: str, model: str, on: str | None, quant: str | None, no_save: bool, as_json: bool
) -> None:
    """Read `llama-bench -o json|csv` output or what `ollama run --verbose` prints, fit the
    decode/prefill efficiencies that reproduce it, and store them for `--calibrated` plans."""
    from rigwise.bench.imports import import_file

    result = import_file(Path(file), on, model, quant, save=not no_save)
    if as_json:
        print_json(result.to_dict())
        return
    echo = click.echo
    echo(f"{result.source}: {len(result.rates)} rates on {result.accelerator_id}")
    for key, value in result.factors.items():
        echo(f"  {key} = {value:.3f}")
    for phase, why in result.refused.items():
        echo(f"  {phase}: not stored: {why}")
    plan = f"{result.model} {result.quant} on {result.accelerator_id} (llama.cpp)"
    for phase in ("prefill", "decode"):
        if phase in result.before and phase in result.after:
            echo(
                f"{plan}: {phase} {result.before[phase]:,.1f} -> {result.after[phase]:,.1f} tok/s "
                "with this calibration"
            )
    if result.run_id is not None:
        echo(
            f"stored as run {result.run_id}: `rigwise infer {result.model} --on "
            f"{result.accelerator_id} --quant {result.quant} --calibrated` uses it"
        )
    elif result.factors:
        echo("not stored (--no-save)")
