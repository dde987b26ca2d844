"""`rigwise gpus [compare A B ...]` and `rigwise gpu NAME`: the accelerator catalog, compared.

Sorting and the value columns come from ``rigwise.api.gpus`` (shared with the web UI).
JSON (documented in catalog/SCHEMA.md, "JSON keys of a device"): ``gpu`` prints one device object;
``gpus`` and ``gpus compare`` print ``{"devices": [...], "notes": [...]}``. Each device object is
``Accelerator.to_dict()`` plus ``value`` (gb_per_usd, gb_s_per_usd, bf16_tflops_per_watt).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import click

from rigwise.api.gpus import SORT_KEYS, sort_devices, value_metrics
from rigwise.cli._common import EXIT_INFEASIBLE, console, print_json
from rigwise.hardware import Accelerator, Resolution, accelerators, resolve_accelerator
from rigwise.units import TB, GiB, format_memory, format_rate, parse_bytes

TERA = 1e12


def device_json(acc: Accelerator) -> dict[str, Any]:
    return {**acc.to_dict(), "value": value_metrics(acc)}


# --- formatting -----------------------------------------------------------------------------------


def _num(value: float | None, digits: int = 3, unit: str = "") -> str:
    return "—" if value is None else f"{value:.{digits}g}{unit}"


def _tflops(acc: Accelerator, dtype: str) -> str:
    value = acc.flops.get(dtype)
    return "—" if value is None else f"{value / TERA:.4g}"


def _price(acc: Accelerator) -> str:
    if acc.street_price_usd:
        return f"${acc.street_price_usd:,.0f}"
    return f"${acc.launch_price_usd:,.0f}*" if acc.launch_price_usd else "—"


def _bandwidth(acc: Accelerator) -> str:
    value = acc.memory_bandwidth_bytes_per_s
    return format_rate(value) if value < TB else f"{value / TB:.3g} TB/s"


def _table_row(acc: Accelerator) -> list[str]:
    value = value_metrics(acc)
    return [
        acc.id,
        f"{acc.memory_bytes / GiB:.4g}",
        f"{acc.memory_bandwidth_bytes_per_s / 1e9:.4g}",
        _tflops(acc, "bf16"),
        _tflops(acc, "fp8"),
        f"{acc.tdp_watts:.0f}" if acc.tdp_watts else "—",
        _price(acc),
        _num(value["gb_per_usd"], 2),
        _num(value["gb_s_per_usd"], 2),
        _num(value["bf16_tflops_per_watt"], 2),
    ]


# Units live in the headers so that the table fits an 80-column terminal.
_TABLE_HEADERS = ("id", "GiB", "GB/s", "bf16", "fp8", "W", "price", "GB/$", "GB/s/$", "TF/W")


def _render_table(devices: Iterable[Accelerator]) -> None:
    from rich import box
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD, padding=(0, 0, 0, 1), pad_edge=False)
    for index, header in enumerate(_TABLE_HEADERS):
        if index == 0:
            table.add_column(header, overflow="fold", min_width=10)
        else:
            table.add_column(header, justify="right", no_wrap=True)
    for acc in devices:
        table.add_row(*_table_row(acc))
    console().print(table)
    click.echo(
        "bf16, fp8: dense TFLOPS. price: street, * = launch. TF/W: bf16 TFLOPS per TDP watt."
    )


def _pcie(acc: Accelerator) -> str:
    return f"Gen{acc.pcie_gen} x{acc.pcie_lanes}" if acc.pcie_gen else "—"


def _nvlink(acc: Accelerator) -> str:
    return format_rate(acc.nvlink_bytes_per_s) if acc.nvlink_bytes_per_s else "—"


def _form(acc: Accelerator) -> str:
    slots = f"{acc.slot_width:g}-slot" if acc.slot_width else ""
    return " ".join(part for part in (acc.form_factor, slots) if part) or "—"


def _launch(acc: Accelerator) -> str:
    price = f"${acc.launch_price_usd:,.0f}" if acc.launch_price_usd else ""
    return " ".join(part for part in (str(acc.launch_year or ""), price) if part) or "—"


def _street(acc: Accelerator) -> str:
    if not acc.street_price_usd:
        return "—"
    return f"${acc.street_price_usd:,.0f} ({acc.street_price_date})"


def _value(key: str) -> Callable[[Accelerator], str]:
    return lambda acc: _num(value_metrics(acc)[key], 3)


def _dtype(dtype: str) -> tuple[str, Callable[[Accelerator], str]]:
    unit = "TOPS" if dtype == "int8" else "TFLOPS"
    return f"{dtype} {unit}", lambda acc: _tflops(acc, dtype)


def _acc16(acc: Accelerator) -> str:
    return _num(acc.fp16_acc16_flops / TERA if acc.fp16_acc16_flops else None, 4)


def _compare_fields() -> list[tuple[str, Callable[[Accelerator], str]]]:
    return [
        ("name", lambda a: a.name),
        ("vendor / kind", lambda a: f"{a.vendor} / {a.kind}"),
        ("memory", lambda a: f"{format_memory(a.memory_bytes)} {a.memory_type}".strip()),
        ("bandwidth", _bandwidth),
        *(_dtype(d) for d in ("fp32", "tf32", "fp16", "bf16")),
        ("fp16 acc16 TFLOPS", _acc16),
        *(_dtype(d) for d in ("fp8", "int8", "fp4")),
        ("vector fp32 TFLOPS", lambda a: _num(a.vector_fp32_flops / TERA or None, 4)),
        ("TDP", lambda a: f"{a.tdp_watts:.0f} W" if a.tdp_watts else "—"),
        ("PCIe", _pcie),
        ("NVLink (per dir.)", _nvlink),
        ("form factor", _form),
        ("power", lambda a: a.power_connectors or "—"),
        ("launch", _launch),
        ("street price", _street),
        ("rental $/h", lambda a: _num(a.rental_usd_per_hour, 3)),
        ("GiB per $", _value("gb_per_usd")),
        ("GB/s per $", _value("gb_s_per_usd")),
        ("bf16 TFLOPS per W", _value("bf16_tflops_per_watt")),
    ]


def _render_compare(devices: list[Accelerator], show_source: bool) -> None:
    from rich.table import Table

    table = Table(show_lines=False)
    table.add_column("field", style="bold", no_wrap=True)
    for acc in devices:
        table.add_column(acc.id, overflow="fold", max_width=36)
    fields = _compare_fields()
    if show_source:
        fields.append(("source", lambda a: a.source))
    for label, getter in fields:
        table.add_row(label, *(str(getter(acc)) for acc in devices))
    console().print(table)


def _print_notes(notes: list[str]) -> None:
    for note in notes:
        click.echo(f"note: {note}")


# --- commands -------------------------------------------------------------------------------------


def _known(field: str, wanted: set[str]) -> set[str]:
    """``wanted`` if every value is some accelerator's ``field``; a typo ('nvida') matched
    nothing and said only 'No accelerator matches those filters'."""
    from rigwise.errors import UnknownNameError, closest

    known = {getattr(acc, field) for acc in accelerators()}
    for value in sorted(wanted - known):
        raise UnknownNameError(field, value, closest(value, sorted(known)))
    return wanted


def select(
    vendors: tuple[str, ...],
    kinds: tuple[str, ...],
    min_memory: str | None,
    max_price: float | None,
) -> list[Accelerator]:
    """The catalog filtered the way ``rigwise gpus`` options say."""
    floor = parse_bytes(min_memory) if min_memory else 0.0
    wanted_vendors = _known("vendor", {v.lower() for v in vendors})
    wanted_kinds = _known("kind", {k.lower() for k in kinds}) or {"gpu", "unified", "tpu", "npu"}
    if wanted_vendors and not kinds:  # asked by vendor: every kind of theirs, CPUs and SoCs too
        wanted_kinds |= {"cpu"}
    return [
        acc
        for acc in accelerators()
        if (not wanted_vendors or acc.vendor in wanted_vendors)
        and acc.kind in wanted_kinds
        and acc.memory_bytes >= floor
        and (max_price is None or (acc.price_usd is not None and acc.price_usd <= max_price))
    ]


@click.group(invoke_without_command=True)
@click.option(
    "--sort",
    "sort",
    type=click.Choice(sorted(SORT_KEYS)),
    default="bf16",
    show_default=True,
    help="Order of the list (best first).",
)
@click.option("--vendor", multiple=True, help="nvidia, amd, intel, apple, google (repeatable).")
@click.option(
    "--kind",
    multiple=True,
    help="gpu, unified, tpu, npu, cpu (default: all but cpu; with --vendor, all).",
)
@click.option("--min-memory", default=None, help="e.g. 24GB")
@click.option("--max-price", type=float, default=None, help="USD; street price, else launch price.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.pass_context
def gpus(
    ctx: click.Context,
    sort: str,
    vendor: tuple[str, ...],
    kind: tuple[str, ...],
    min_memory: str | None,
    max_price: float | None,
    as_json: bool,
) -> int | None:
    """Compare accelerators: memory, bandwidth, dense TFLOPS, power, price and value per $ and W."""
    if ctx.invoked_subcommand is not None:
        return None
    devices = sort_devices(select(vendor, kind, min_memory, max_price), sort)
    notes = [] if devices else [_nothing_matches(vendor, kind, min_memory, max_price)]
    if as_json:
        print_json({"devices": [device_json(a) for a in devices], "notes": notes})
    elif devices:
        _render_table(devices)
    else:
        click.echo(notes[0], err=True)
    return None if devices else EXIT_INFEASIBLE  # nothing matching valid filters: a result


def _nothing_matches(
    vendor: tuple[str, ...], kind: tuple[str, ...], min_memory: str | None, max_price: float | None
) -> str:
    """Why the list is empty: which filter, dropped alone, lets devices through (and how many)."""
    given = {
        "--vendor": (" ".join(vendor), lambda: select((), kind, min_memory, max_price)),
        "--kind": (" ".join(kind), lambda: select(vendor, (), min_memory, max_price)),
        "--min-memory": (min_memory, lambda: select(vendor, kind, None, max_price)),
        "--max-price": (max_price, lambda: select(vendor, kind, min_memory, None)),
    }
    # --max-price 0 is a filter too: the message said "No accelerator matches . Relax ..."
    filters = {n: (v, other) for n, (v, other) in given.items() if v is not None and v != ""}
    said = ", ".join(f"{name} {value:g}" if isinstance(value, float) else f"{name} {value}"
                     for name, (value, _) in filters.items())  # fmt: skip
    counts = {name: len(other()) for name, (_, other) in filters.items()}
    relax = [f"{name} ({count} match without it)" for name, count in counts.items() if count]
    fix = f"Relax {' or '.join(relax)}." if relax else "Relax more than one of them."
    return f"No accelerator matches {said}. {fix}"


def _resolve_all(names: Iterable[str]) -> list[Resolution]:
    return [resolve_accelerator(name) for name in names]


@gpus.command("compare")
@click.argument("names", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option("--source", "show_source", is_flag=True, help="Add each device's sources.")
def compare(names: tuple[str, ...], as_json: bool, show_source: bool) -> None:
    """Side by side: rows are fields, columns are devices (e.g. "RTX 3090" "RTX 4090" "M3 Max")."""
    resolved = _resolve_all(names)
    notes = [r.note for r in resolved if r.note]
    devices = [r.accelerator for r in resolved]
    if as_json:
        print_json({"devices": [device_json(a) for a in devices], "notes": notes})
        return
    _render_compare(devices, show_source)
    _print_notes(notes)


@click.command("gpu")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option(
    "--verdict",
    "with_verdict",
    is_flag=True,
    help="Is it a good buy, and for what (chat, serve, finetune, train), with the reasons.",
)
def gpu(name: str, as_json: bool, with_verdict: bool) -> None:
    """One accelerator with every field and its sources."""
    resolution = resolve_accelerator(name)
    if with_verdict:
        _print_verdict(resolution.accelerator, as_json)
        return
    if as_json:
        print_json({**device_json(resolution.accelerator), "note": resolution.note or None})
        return
    _render_compare([resolution.accelerator], show_source=True)
    if resolution.accelerator.notes:
        click.echo(f"notes: {resolution.accelerator.notes}")
    _print_notes([resolution.note] if resolution.note else [])


def _print_verdict(accelerator: Accelerator, as_json: bool) -> None:
    """Per use: good, caution or bad, with the data rows' reasons (gpu_verdict_rules.csv)."""
    from rigwise.design.verdict import verdict

    result = verdict(accelerator)
    if as_json:
        print_json(result.to_dict())
        return
    out = console()
    colours = {"good": "green", "caution": "yellow", "bad": "red"}
    out.print(f"[bold]{accelerator.name}[/]: {result.summary()}")
    for use, reasons in result.reasons.items():
        tone = result.uses[use]
        out.print(f"[{colours[tone]}]{use}: {tone}[/]")
        for reason in reasons:
            out.print(f"  {reason.severity:7} {reason.reason}")
            out.print(f"          [dim]source: {reason.source}[/]")
