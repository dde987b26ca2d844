"""`rigwise model NAME_OR_PATH` and `rigwise models`: what a model is made of."""

from __future__ import annotations

from typing import Any

import click

from rigwise.cli._common import console, print_json

CONTEXTS = (8192, 32768, 131072)
CACHE_DTYPES = ("fp16", "fp8", "q8_0", "q4_0")


def model_report(name_or_path: str) -> dict[str, Any]:
    """The ``--json`` object: ModelSpec.to_dict() plus KV bytes at a few context lengths."""
    from rigwise.models import load_model

    spec = load_model(name_or_path)
    report = spec.to_dict()
    report["kv_cache_bytes_at_context"] = {
        str(n): {d: spec.kv_cache_bytes(n, d) for d in CACHE_DTYPES} for n in CONTEXTS
    }
    return report


@click.command()
@click.argument("name_or_path")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON object (keys: SCHEMA.md).")
def model(name_or_path: str, as_json: bool) -> None:
    """Architecture, exact parameter counts, weight bytes per format and KV-cache size.

    NAME_OR_PATH is a catalog name ('llama-3.1-70b', 'meta-llama/Llama-3.1-70B',
    'Qwen3 30B A3B'), a config.json (or its folder) or a .gguf file.
    """
    report = model_report(name_or_path)
    if as_json:
        print_json(report)
        return
    _render(report)


def _render(r: dict[str, Any]) -> None:
    from rich.table import Table

    from rigwise.units import format_bytes, format_count

    out = console()
    out.print(f"[bold]{r['name']}[/bold]  ({r['architecture']})  {r['source']}")
    for note in r["notes"]:
        out.print(f"  note: {note}")
    arch = Table(show_header=False, box=None, pad_edge=False)
    for label, value in _arch_rows(r, format_count):
        arch.add_row(label, value)
    out.print(arch)

    weights = Table(title="Weights", title_justify="left")
    weights.add_column("format")
    weights.add_column("bytes", justify="right")
    for quant, size in r["weights_bytes"].items():
        weights.add_row(quant, format_bytes(size))
    out.print(weights)

    kv = Table(title="KV cache (one sequence)", title_justify="left")
    kv.add_column("cache dtype")
    kv.add_column("per token", justify="right")
    for n in CONTEXTS:
        kv.add_column(f"{n // 1024}K ctx", justify="right")
    for dtype in CACHE_DTYPES:
        at = [format_bytes(r["kv_cache_bytes_at_context"][str(n)][dtype]) for n in CONTEXTS]
        kv.add_row(dtype, format_bytes(r["kv_cache_bytes_per_token"][dtype]), *at)
    out.print(kv)


def _arch_rows(r: dict[str, Any], count: Any) -> list[tuple[str, str]]:
    rows = [
        ("params total", f"{r['params_total']:,} ({count(r['params_total'])})"),
        ("params active / token", f"{r['params_active']:,} ({count(r['params_active'])})"),
        ("layers", str(r["layers"])),
        ("hidden size", str(r["hidden_size"])),
        ("attention heads / KV heads", f"{r['num_attention_heads']} / {r['num_kv_heads']}"),
        ("head dim", str(r["head_dim"])),
        ("vocab", f"{r['vocab_size']:,}"),
        ("max context", f"{r['max_context']:,}"),
    ]
    if r["sliding_window"]:
        rows.append(
            ("sliding window", f"{r['sliding_window']} on {r['sliding_window_layers']} layers")
        )
    if r["linear_attention_layers"]:
        state = f"{r['linear_state_bytes'] / 1e6:,.1f} MB fixed state per sequence"
        layers = f"{r['linear_attention_layers']} of {r['layers']} layers (no KV cache)"
        rows.append(("linear attention", f"{layers}, {state}"))
    if r["moe"]:
        m = r["moe"]
        experts = f"{m['experts_per_token']} of {m['num_experts']} routed"
        if m["num_shared_experts"]:
            experts += f" + {m['num_shared_experts']} shared"
        rows.append(("experts", f"{experts}, {m['num_moe_layers']} MoE layers"))
    if r["mla"]:
        rows.append(("attention", f"MLA, kv_lora_rank {r['mla']['kv_lora_rank']}"))
    if r["params_mtp"]:
        rows.append(("MTP module (not in total)", f"{r['params_mtp']:,}"))
    if r["params_vision"]:
        rows.append(("vision tower (not in total)", f"{r['params_vision']:,}"))
    for part, value in r["params_breakdown"].items():
        rows.append((f"  {part}", f"{value:,}"))
    return rows


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the catalog as JSON.")
def models(as_json: bool) -> None:
    """The model catalog: names, architectures and exact parameter counts."""
    from rigwise.models import catalog_models
    from rigwise.models.catalog import catalog_entries

    entries = catalog_entries()
    rows = [
        {
            "name": s.name,
            "architecture": s.architecture,
            "params_total": s.params_total,
            "params_active": s.params_active,
            "layers": s.num_layers,
            "max_context": s.max_context,
            "hf_repo": entries[s.name].hf_repo,
            "aliases": list(entries[s.name].aliases),
            "source": s.source,
        }
        for s in catalog_models()
    ]
    if as_json:
        print_json(rows)
        return
    _render_list(rows)


def _render_list(rows: list[dict[str, Any]]) -> None:
    from rich.table import Table

    from rigwise.units import format_count

    table = Table(title=f"{len(rows)} catalog models", title_justify="left")
    for column in ("name", "architecture", "params", "active", "layers", "context", "hf repo"):
        table.add_column(column, justify="right" if column in ("params", "active") else "left")
    for r in rows:
        table.add_row(
            r["name"],
            r["architecture"],
            format_count(r["params_total"]),
            format_count(r["params_active"]),
            str(r["layers"]),
            f"{r['max_context']:,}",
            r["hf_repo"],
        )
    console().print(table)
