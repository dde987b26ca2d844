"""`rigwise probe | bench [history] | monitor`: the machine, what it is, how it performs."""

from __future__ import annotations

from typing import Any

import click

from rigwise.cli._common import PORT, console, fail, print_json
from rigwise.units import format_bytes, format_flops, format_rate, format_seconds

DEFAULT_MONITOR_PORT = 9847
MIN_INTERVAL_S, MAX_INTERVAL_S = 0.1, 3600


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    formatter = {"FLOP/s": format_flops, "B/s": format_rate, "B": format_bytes}.get(unit)
    if formatter:
        return formatter(value)
    if unit == "s":
        return format_seconds(value)
    return f"{value:.4g} {unit}"


def _gpu_rows(report: Any) -> list[list[str]]:
    rows = []
    for gpu in report.gpus:
        link = gpu.pcie
        pcie = (
            f"Gen{link.current_gen or '?'} x{link.current_width or '?'}"
            f" / Gen{link.max_gen or '?'} x{link.max_width or '?'}"
            if link
            else "-"
        )
        power = (
            f"{gpu.power_limit_watts:.0f} / {gpu.power_default_limit_watts:.0f} W"
            if gpu.power_limit_watts and gpu.power_default_limit_watts
            else "-"
        )
        rows.append(
            [
                str(gpu.index),
                gpu.name,
                gpu.catalog_id or "(not in catalog)",
                format_bytes(gpu.memory_bytes),
                pcie,
                power,
                "-" if gpu.numa_node is None else str(gpu.numa_node),
                str(gpu.nvlink_links_active),
            ]
        )
    return rows


def _print_gpus(out: Any, report: Any) -> None:
    """The GPU table and, with more than one GPU, their topology matrix."""
    from rich.table import Table

    if report.gpus:
        table = Table(title="GPUs")
        for column in (
            "#",
            "name",
            "catalog",
            "memory",
            "PCIe now / max",
            "power limit / default",
            "NUMA",
            "NVLinks",
        ):
            table.add_column(column)
        for row in _gpu_rows(report):
            table.add_row(*row)
        out.print(table)
    else:
        out.print("[bold]GPUs[/bold] none found")
    if len(report.gpu_topology) > 1:
        topo = Table(title="GPU topology (as nvidia-smi topo -m)")
        topo.add_column("")
        for i in range(len(report.gpu_topology)):
            topo.add_column(f"GPU{i}")
        for i, row in enumerate(report.gpu_topology):
            topo.add_row(f"GPU{i}", *row)
        out.print(topo)


def render_probe(report: Any) -> None:
    from rich.markup import escape

    out = console()
    cpu = report.cpu
    out.print(
        f"[bold]CPU[/bold]  {cpu.model}: {cpu.cores} cores / {cpu.threads} threads, "
        f"{cpu.numa_nodes} NUMA node(s); {' '.join(cpu.isa_features) or 'no ISA flags read'}"
    )
    memory = report.memory
    extra = ", ".join(
        part
        for part in (
            memory.kind or "",
            f"{memory.speed_mt_per_s:.0f} MT/s" if memory.speed_mt_per_s else "",
            f"{memory.channels} DIMMs" if memory.channels else "",
        )
        if part
    )
    out.print(
        f"[bold]RAM[/bold]  {format_bytes(memory.total_bytes)}" + (f" ({extra})" if extra else "")
    )
    _print_gpus(out, report)
    for disk in report.disks:
        out.print(
            f"[bold]disk[/bold] {disk.name}: {format_bytes(disk.size_bytes)} {disk.kind}"
            f"{' ' + disk.model if disk.model else ''}"
        )
    for nic in report.network:
        speed = (
            f"{nic.speed_bits_per_s / 1e9:g} Gbit/s"
            if nic.speed_bits_per_s
            else "speed not reported"
        )
        out.print(f"[bold]net[/bold]  {nic.name}: {'up' if nic.up else 'down'}, {speed}")
    sw = report.software
    out.print(
        f"[bold]OS[/bold]   {sw.os}, kernel {sw.kernel}, Python {sw.python}"
        + (f", driver {sw.driver_version}" if sw.driver_version else "")
        + (f", CUDA {sw.cuda_driver_version}" if sw.cuda_driver_version else "")
    )
    for warning in report.warnings:
        out.print(
            f"[bold yellow]warning[/bold yellow] {escape(warning.message)}\n"
            f"  [green]fix:[/green] {escape(warning.fix)}"
        )
    for note in report.notes:
        out.print(f"[dim]note: {escape(note)}[/dim]")


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the probe as JSON (docs/probe.md).")
def probe(as_json: bool) -> None:
    """What this machine is: CPU, RAM, GPUs (PCIe, power, NUMA, topology), disks, network,
    with warnings and fixes. RIGWISE_FAKE_HARDWARE=<file> describes a fake machine instead."""
    from rigwise.probe import probe as run_probe

    report = run_probe()
    if as_json:
        print_json(report.to_dict())
    else:
        render_probe(report)


def render_bench(result: Any) -> None:
    from rich.markup import escape
    from rich.table import Table

    table = Table(
        title=f"rigwise bench{' --quick' if result.quick else ''} ({result.seconds:.1f} s)"
    )
    for column in (
        "measurement",
        "device",
        "measured",
        "catalog peak",
        "rigwise predicted",
        "% of peak",
    ):
        table.add_column(column, justify="left" if column in ("measurement", "device") else "right")
    for m in result.measurements:
        fraction = m.fraction_of_peak
        table.add_row(
            m.name,
            m.device,
            _fmt(m.value, m.unit),
            _fmt(m.peak, m.unit),
            _fmt(m.predicted, m.unit),
            "-" if fraction is None else f"{fraction:.0%}",
        )
    out = console()
    out.print(table)
    if result.platform:
        out.print(f"machine: {escape(result.platform)}")
    for ref in result.references:
        out.print(f"reference plan: {escape(ref.describe())}")
    for accelerator, factors in result.calibration.items():
        values = ", ".join(f"{k}={v:.3f}" for k, v in sorted(factors.items()))
        out.print(f"[bold]calibration[/bold] {accelerator}: {values}")
    for skipped in result.skipped:
        out.print(f"[dim]skipped {escape(skipped.name)}: {escape(skipped.reason)}[/dim]")
    if result.run_id is not None:
        stored = "" if result.calibration else " (measurements only: no calibration stored)"
        out.print(
            f"[dim]stored as run {result.run_id}{stored}; `rigwise bench history` compares "
            "runs[/dim]"
        )


@click.group(invoke_without_command=True)
@click.option("--quick", is_flag=True, help="Small sizes: under two minutes on a 2-core CPU.")
@click.option(
    "--only",
    default="",
    metavar="GROUPS",
    help="Comma-separated groups: matmul,memory,transfer,disk,llm,finetune,external.",
)
@click.option("--model", default=None, help="Catalog model the LLM benchmark is shaped after.")
@click.option(
    "--disk-dir",
    default=None,
    type=click.Path(file_okay=False, exists=True),
    help="Directory for the disk test (default: the temp dir).",
)
@click.option("--no-save", is_flag=True, help="Do not store the run (no calibration).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON (docs/probe.md).")
@click.pass_context
def bench(
    ctx: click.Context,
    quick: bool,
    only: str,
    model: str | None,
    disk_dir: str | None,
    no_save: bool,
    as_json: bool,
) -> None:
    """Measure this machine next to the catalog's peak and rigwise's prediction, and store
    the measured efficiencies for `--calibrated` plans."""
    if ctx.invoked_subcommand is not None:
        return
    from rigwise.bench import run_bench

    groups = [g.strip() for g in only.split(",") if g.strip()] or None
    typed = ctx.get_parameter_source("only") is click.core.ParameterSource.COMMANDLINE
    if groups is None and typed:
        fail(  # '' or ',' ran every group (minutes) where the user meant to pick some
            f"--only {only!r} names no group.",
            hint="Give some of matmul,memory,transfer,disk,llm,finetune,external (or leave "
            "--only out for all).",
        )
    if model is not None:  # a typo surfaced only after the other groups had run, or never
        from rigwise.models import load_model

        load_model(model)
    result = run_bench(
        quick=quick,
        only=groups,
        model=model,
        disk_dir=disk_dir,
        progress=not as_json,
        save=not no_save,
    )
    if as_json:
        print_json(result.to_dict())
    else:
        render_bench(result)


def _register_import() -> None:
    from rigwise.cli.bench_import import bench_import

    bench.add_command(bench_import)


@bench.command("history")
@click.option("--limit", default=10, show_default=True, help="How many recent runs.")
@click.option("--json", "as_json", is_flag=True, help="Print the runs as JSON.")
def bench_history(limit: int, as_json: bool) -> None:
    """Compare this machine's stored bench runs over time."""
    from rich.table import Table

    from rigwise.bench import history

    entries = history(limit=limit)
    if as_json:
        print_json([entry.to_dict() for entry in entries])
        return
    if not entries:
        console().print("No stored runs for this machine yet: run `rigwise bench --quick`.")
        return
    table = Table(title="bench history (change is against the oldest run shown)")
    table.add_column("measurement")
    for entry in entries:
        table.add_column(
            f"#{entry.run_id} {entry.started_at[:16]}{' q' if entry.quick else ''}", justify="right"
        )
    table.add_column("change", justify="right")
    keys = sorted({key for entry in entries for key in entry.values})
    for key in keys:
        unit = next(e.units[key] for e in entries if key in e.units)
        values = [entry.values.get(key) for entry in entries]
        present = [v for v in values if v is not None]
        change = f"{present[-1] / present[0] - 1:+.0%}" if len(present) > 1 and present[0] else "-"
        table.add_row(key, *[_fmt(v, unit) for v in values], change)
    console().print(table)


@click.command()
@click.option(
    "--port",
    default=DEFAULT_MONITOR_PORT,
    show_default=True,
    type=PORT,
    help="Port of the Prometheus endpoint (0 = any free port).",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on (0.0.0.0 to let a Prometheus server on the network scrape).",
)
@click.option(
    "--interval",
    default=1.0,
    show_default=True,
    help=f"Seconds between screen refreshes ({MIN_INTERVAL_S} to {MAX_INTERVAL_S:,}).",
)
@click.option("--no-live", is_flag=True, help="Serve metrics without the terminal view.")
@click.option("--json", "as_json", is_flag=True, help="Print one snapshot as JSON and exit.")
def monitor(port: int, host: str, interval: float, no_live: bool, as_json: bool) -> None:
    """Serve GPU and host metrics for Prometheus at /metrics and show them live
    (docs/grafana-dashboard.json charts them in Grafana)."""
    import time

    from rigwise.monitor import snapshot
    from rigwise.probe import default_backend

    if not MIN_INTERVAL_S <= interval <= MAX_INTERVAL_S:  # 0 probes the GPUs in a busy loop
        fail(
            f"--interval {interval:g} is out of range.",
            hint=f"Use {MIN_INTERVAL_S} to {MAX_INTERVAL_S:,} seconds, e.g. --interval 1.",
        )
    backend = default_backend()
    if as_json:
        print_json(snapshot(backend).to_dict())
        return
    from rigwise.monitor.live import run_live
    from rigwise.monitor.prometheus import serve

    endpoint = serve(backend, port=port, host=host)
    click.echo(f"serving Prometheus metrics at {endpoint.url} (Ctrl-C to stop)", err=True)
    try:
        if no_live:
            while True:
                time.sleep(3600)
        run_live(backend, interval_s=interval)
    finally:
        endpoint.stop()


_register_import()
