"""`rigwise validate intervals [--write]`: per-regime prediction ranges and their coverage."""

from __future__ import annotations

import click

from rigwise.cli._common import EXIT_OK, print_json


@click.command(name="intervals")
@click.option(
    "--write",
    is_flag=True,
    help="Store the ranges in catalog/data/prediction_intervals.csv (run after any change to "
    "the estimators or the validation rows; a test fails while the stored table is stale).",
)
@click.option("--json", "as_json", is_flag=True, help="Print ranges and coverage as JSON.")
def command(write: bool, as_json: bool) -> int:
    """P10-P90 ranges per regime (engine, device class, precision, scale) from the independent
    validation rows, and their held-out coverage: each device's rows are checked against a
    range computed without them. Target: 80 % +- 5 % per regime."""
    from rigwise.validation.all_rows import all_comparisons
    from rigwise.validation.intervals import coverage_by_regime, table_from, write_table

    comparisons = all_comparisons()
    table = table_from(comparisons)
    coverage = coverage_by_regime(comparisons)
    written = str(write_table(comparisons)) if write else None
    if as_json:
        print_json(
            {
                "ranges": [
                    {
                        "regime": key,
                        "rows": r.rows,
                        "devices_seen": r.groups,
                        "p10_factor": _exp(r.log_q10),
                        "p90_factor": _exp(r.log_q90),
                        "max_devices": r.max_devices,
                        "sources": r.sources,
                    }
                    for key, r in sorted(table.items())
                ],
                "coverage": [c.to_dict() for c in coverage],
                "written": written,
            }
        )
        return EXIT_OK
    click.echo(f"{'regime':52} {'rows':>5} {'P10':>7} {'P90':>7}")
    for key, r in sorted(table.items()):
        click.echo(f"{key:52} {r.rows:>5} {_pct(r.log_q10):>7} {_pct(r.log_q90):>7}")
    click.echo("\nheld-out coverage of independent rows (target 80 % +- 5 %):")
    for c in coverage:
        flag = "" if c.in_scope else "  (out of scope: 2023 llama.cpp builds)"
        if c.rows < 10:
            miss = "  (under 10 rows: not judged)"
        else:
            miss = "" if abs(c.coverage - 0.8) <= 0.05 else "  MISS"
        click.echo(f"{c.regime:52} {c.covered:>4}/{c.rows:<4} {c.coverage:6.0%}{miss}{flag}")
    if written:
        click.echo(f"\nwrote {written}")
    return EXIT_OK


def _exp(value: float) -> float:
    import math

    return math.exp(value)


def _pct(value: float) -> str:
    return f"{(_exp(value) - 1) * 100:+.0f}%"
