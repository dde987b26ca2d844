"""`rigwise validate intervals [--write]`: per-regime prediction ranges and their coverage."""

from __future__ import annotations

import click

from rigwise.cli._common import EXIT_OK, print_json
from rigwise.validation.intervals import latency_regimes, latency_text


@click.command(name="intervals")
@click.option(
    "--write",
    is_flag=True,
    help="Store the ranges in catalog/data/prediction_intervals.csv and the widening factors, "
    "calibrated on held-out coverage, in catalog/data/prediction_interval_widening.csv (run "
    "after any change to the estimators or the validation rows; a test fails while stale).",
)
@click.option("--json", "as_json", is_flag=True, help="Print ranges and coverage as JSON.")
def command(write: bool, as_json: bool) -> int:
    """P10-P90 ranges per regime (engine, device class, precision, scale) from the independent
    validation rows, and their held-out coverage: each device's rows are checked against a
    range computed without them. Target: 80 % +- 5 % per regime."""
    from rigwise.estimate.intervals import packaged_widening, reload_widening
    from rigwise.validation.all_rows import all_comparisons
    from rigwise.validation.intervals import annotate, coverage_by_regime, table_from, write_table
    from rigwise.validation.widening import calibrate, write_widening

    comparisons = all_comparisons()
    table = table_from(comparisons)
    fits = calibrate(comparisons)
    written = None
    if write:
        written = f"{write_table(comparisons)} and {write_widening(fits)}"
        reload_widening()
        comparisons = annotate(comparisons)  # coverage with the factors just written
    stored = packaged_widening()
    coverage = coverage_by_regime(comparisons)
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
                "widening": {
                    "in_use_pooled": {"unseen": stored[0], "scale": stored[1]},
                    "calibrated_now": [f.to_dict() for f in fits],
                },
                "serving_latency": latency_regimes(comparisons),
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
    click.echo(
        f"\nwidening factors in use (pooled; per metric in the file): unseen x{stored[0]:.2f}, "
        f"scale x{stored[1]:.2f}; "
        "calibrated now on held-out coverage:"
    )
    for f in fits:
        d = f.to_dict()
        if not f.cases:
            click.echo(f"  {f.factor} {f.metric}: no held-out cases; prior x{f.prior} kept")
            continue
        click.echo(
            f"  {f.factor} {f.metric}: x{f.value:.2f} (prior x{f.prior}) on {f.cases} "
            f"held-out rows from {f.groups} devices: coverage "
            f"{d['coverage_unwidened']:.0%} unwidened, "
            f"{d['coverage_prior']:.0%} with the prior, {d['coverage_chosen']:.0%} chosen"
        )
    click.echo(latency_text(comparisons))
    if written:
        click.echo(f"\nwrote {written}")
    return EXIT_OK


def _exp(value: float) -> float:
    import math

    return math.exp(value)


def _pct(value: float) -> str:
    return f"{(_exp(value) - 1) * 100:+.0f}%"
