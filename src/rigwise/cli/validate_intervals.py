"""`rigwise validate intervals [--write]`: per-regime prediction ranges and their coverage."""

from __future__ import annotations

import math
from typing import Any

import click

from rigwise.cli._common import EXIT_OK, print_json
from rigwise.validation.intervals import latency_regimes, latency_text


@click.command(name="intervals")
@click.option(
    "--write",
    is_flag=True,
    help="Store the ranges in catalog/data/prediction_intervals.csv and the width factors, "
    "calibrated on held-out coverage, in catalog/data/prediction_interval_widening.csv (run "
    "after any change to the estimators or the validation rows; a test fails while stale).",
)
@click.option("--json", "as_json", is_flag=True, help="Print ranges and coverage as JSON.")
def command(write: bool, as_json: bool) -> int:
    """P10-P90 ranges per regime (engine, device class, precision, scale) from the independent
    validation rows, and their held-out coverage: each device's rows are checked against a
    range computed without them, with width factors calibrated without their cases.
    Target: 80 % +- 5 % per regime, judged where the binomial sd of 80 % over its rows,
    sqrt(.16 / n), is at most 5 % (64 rows) on 3 devices; smaller regimes say how far chance
    alone moves them."""
    from rigwise.estimate.intervals import reload_widening
    from rigwise.validation.all_rows import all_comparisons
    from rigwise.validation.coverage import (
        annotate,
        coverage_by_regime,
        device_correlation,
        overall,
    )
    from rigwise.validation.intervals import table_from, write_table
    from rigwise.validation.widening import calibrate, write_widening

    comparisons = all_comparisons()
    table = table_from(comparisons)
    fits = calibrate(comparisons)
    written = None
    if write:
        written = f"{write_table(comparisons)} and {write_widening(fits)}"
        reload_widening()
    # inference and training rows together (validate inference|training each annotate their
    # own; the pooled factors see both here), fit rows with the factors in the file
    comparisons = annotate(comparisons)
    coarse, fine = coverage_by_regime(comparisons), coverage_by_regime(comparisons, fields=5)
    covered, rows = overall(comparisons)
    seen, _ = overall(comparisons, seen=True)
    if as_json:
        print_json(
            {
                "ranges": [_range(key, r) for key, r in sorted(table.items())],
                "coverage": [c.to_dict() for c in coarse],
                "coverage_by_full_regime": [c.to_dict() for c in fine],
                "coverage_overall": {"rows": rows, "covered": covered, "seen_covered": seen},
                "device_correlation": device_correlation(comparisons),
                "widening": [f.to_dict() for f in fits],
                "serving_latency": latency_regimes(comparisons),
                "written": written,
            }
        )
        return EXIT_OK
    click.echo(f"{'regime':52} {'rows':>5} {'P10':>7} {'P90':>7}")
    for key, r in sorted(table.items()):
        click.echo(f"{key:52} {r.rows:>5} {_pct(r.log_q10):>7} {_pct(r.log_q90):>7}")
    _print_coverage(comparisons, coarse, fine)
    _print_widening(fits)
    click.echo(latency_text(comparisons))
    if written:
        click.echo(f"\nwrote {written}")
    return EXIT_OK


def _print_widening(fits: list[Any]) -> None:
    click.echo("\nwidth factors calibrated now on held-out coverage (all rows):")
    for f in fits:
        d = f.to_dict()
        if not f.cases:
            click.echo(f"  {f.factor} {f.metric}: no held-out cases; prior x{f.prior} kept")
            continue
        click.echo(
            f"  {f.factor} {f.metric}: x{f.value:.2f} on {f.cases} held-out rows from "
            f"{f.groups} devices: coverage {d['coverage_unwidened']:.0%} unwidened, "
            f"{d['coverage_chosen']:.0%} chosen"
        )


def _print_coverage(comparisons: list[Any], coarse: list[Any], fine: list[Any]) -> None:
    from rigwise.validation.coverage import (
        BAND,
        JUDGE_DEVICES,
        JUDGE_ROWS,
        device_correlation,
        overall,
    )

    click.echo(
        "\nheld-out coverage of independent rows (target 80 % +- 5 %): 'new device' = its device "
        "held out, width factors calibrated without it; 'seen' = only the row held out.\n"
        f"  sd = binomial sd of an 80 % coverage over the rows, sqrt(.16 / n); judged where it "
        f"is <= {BAND:.0%} ({JUDGE_ROWS} rows) on {JUDGE_DEVICES} devices. Rows of one device "
        f"err together (correlation {device_correlation(comparisons):.2f}): '~n' = as many "
        "independent rows, whose sd sets the 2-sd test."
    )
    click.echo(f"  {'':50} {'new device':>11} {'dev':>4} {'cov':>5} {'seen':>5} {'sd':>5}")
    for title, lines in (("per regime", coarse), ("per full regime (detail)", fine)):
        click.echo(f"  {title}:")
        for c in lines:
            click.echo(
                f"  {c.regime:50} {c.covered:>5}/{c.rows:<5} {c.devices:>4} {c.coverage:5.0%} "
                f"{c.seen_coverage:5.0%} {c.sd:5.0%}  {c.note()}".rstrip()
            )
    covered, rows = overall(comparisons)
    seen, _ = overall(comparisons, seen=True)
    if rows:
        click.echo(
            f"  overall (in scope): new device {covered}/{rows} = {covered / rows:.1%}, "
            f"seen {seen}/{rows} = {seen / rows:.1%}"
        )


def _range(key: str, r: Any) -> dict[str, Any]:
    return {
        "regime": key,
        "rows": r.rows,
        "devices_seen": r.groups,
        "p10_factor": math.exp(r.log_q10),
        "p90_factor": math.exp(r.log_q90),
        "max_devices": r.max_devices,
        "sources": r.sources,
    }


def _pct(value: float) -> str:
    return f"{(math.exp(value) - 1) * 100:+.0f}%"
