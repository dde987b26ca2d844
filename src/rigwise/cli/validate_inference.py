"""`rigwise validate inference [DIR]`: the inference planner against published measurements."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from rigwise.cli._common import console, print_json
from rigwise.cli.option_types import WritableFolder


@click.command("inference")
@click.argument("directory", required=False, type=click.Path(file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print statistics and every row as JSON.")
@click.option(
    "--plot-dir",
    type=WritableFolder(),
    help="Write HTML + PNG plots here (one for independent rows, one for fit rows).",
)
def command(directory: str | None, as_json: bool, plot_dir: str | None) -> None:
    """Per-source error of decode, prefill and serving predictions; coverage; fit checks.

    DIRECTORY defaults to the measurements packaged with rigwise (copied from published
    benchmarks, sources kept). Every row states its role: fit (it set an efficiency factor,
    named in fit_factor) or independent (never used to fit); the two are reported apart.
    """
    from rigwise.validation.inference import validate_inference

    result = validate_inference(
        Path(directory) if directory else None, Path(plot_dir) if plot_dir else None
    )
    if as_json:
        print_json(result)
        return
    from rich.table import Table

    out = console()
    for role, title in (
        ("independent", "independent rows (never used to fit: the headline; ranges held out)"),
        ("fit", "fit rows (they set an efficiency factor: in-sample, not a check)"),
    ):
        table = Table(
            "source", "metric", "rows", "median |err|", "p90 |err|", "bias", "in P10-P90",
            title=title,
        )  # fmt: skip
        for s in (s for s in result.stats if s.role == role):
            table.add_row(
                s.source, s.metric, str(s.rows), f"{s.median_abs_error_pct:.1f}%",
                f"{s.p90_abs_error_pct:.1f}%", f"{s.median_error_pct:+.1f}%", _covered(s),
            )  # fmt: skip
        out.print(table)
    cov = result.coverage
    out.print(f"coverage: {cov.rows_predicted}/{cov.rows_total} rows ({cov.fraction:.0%})")
    for reason, count in cov.skipped.items():
        out.print(f"  skipped {count}: {reason}")
    out.print(
        f"out-of-memory rows predicted 'does not fit': "
        f"{result.oom_predicted_does_not_fit}/{result.oom_rows}; "
        f"rows that ran predicted to fit: {result.ran_predicted_fit}/{result.ran_rows}"
    )
    for line in result.fit_mismatches:
        out.print(f"  mismatch: {line}")
    for name in result.unknown_files:
        out.print(f"  not read (unknown columns): {name}")
    for path in result.plots:
        out.print(f"plot: {path}")


def _covered(stats: Any) -> str:
    """Share of rows inside their range: held out by device for independent rows."""
    if stats.interval_coverage is None:
        return "-"
    return f"{stats.interval_coverage:.0%} of {stats.interval_rows}"
