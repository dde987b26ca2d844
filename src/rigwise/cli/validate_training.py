"""`rigwise validate training [DIR]`: training predictions against published runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from rigwise.cli._common import EXIT_OK, print_json
from rigwise.cli.option_types import WritableFolder

ROLE_HEADINGS = {
    "independent": "independent rows (never used to fit a factor: the headline figures)",
    "fit": "fit rows (they set an efficiency factor: in-sample, not a check)",
    "formula": "formula checks (closed-form values from a paper, not measurements: not validation)",
}


@click.command(name="training")
@click.argument("directory", required=False, type=click.Path(exists=True, file_okay=False))
@click.option(
    "--plot-dir",
    type=WritableFolder(),
    help="Write predicted-vs-measured plots here (one for independent rows, one for fit rows).",
)
@click.option("--rows", is_flag=True, help="Also list every row with its role and error.")
@click.option("--json", "as_json", is_flag=True, help="Print statistics and rows as JSON.")
def command(directory: str | None, plot_dir: str | None, rows: bool, as_json: bool) -> int:
    """Per-source error statistics of step time, throughput and memory over the published
    training runs rigwise keeps (Megatron-LM, Korthikanti, torchtitan, llm-foundry, holdout),
    or over the CSVs in DIRECTORY, with fit and independent rows reported apart."""
    from rigwise.validation.training import validate_training

    result = validate_training(directory)
    plots: list[Path] = []
    if plot_dir:
        from rigwise.validation.stats import write_plots

        plots = write_plots(list(result.comparisons), Path(plot_dir), "training")
    data = result.to_dict()
    if as_json:
        data["plots"] = [str(p) for p in plots]
        print_json(data)
        return EXIT_OK
    if not result.comparisons and not (data["finetune_verdicts"] or {}).get("rows"):
        _say_none_read(directory)
    _print_stats(data["stats"])
    for tool in data["tool_comparisons"]:
        click.echo(
            f"\nlike-for-like vs {tool['tool']} on the same {tool['rigwise_rows']} rows of "
            f"{tool['source']} ({'/'.join(tool['roles'])} rows): rigwise "
            f"{tool['rigwise_mean_abs_error_pct']:.2f}% mean |err|, {tool['tool']} "
            f"{tool['tool_mean_abs_error_pct']:.2f}%"
        )
    verdicts = data["finetune_verdicts"]
    if verdicts and verdicts["rows"]:
        click.echo(
            f"\nfine-tune fits/OOM verdicts (independent): {verdicts['right']} of "
            f"{verdicts['rows']} right ({verdicts['share_right']:.0%}; published OOM "
            f"{verdicts['oom_right']} of {verdicts['oom_rows']}, fits {verdicts['fits_right']} "
            f"of {verdicts['fits_rows']})"
        )
        for line in verdicts["mismatches"]:
            click.echo(f"  wrong: {line}")
    if rows:
        for c in result.comparisons:
            click.echo(
                f"  {c.role[:4]:4} {c.source[:28]:28} {c.label[:56]:56} {c.measured:10.4g} "
                f"{c.predicted:10.4g} {c.error_pct:+6.1f}%"
            )
    for path in plots:
        click.echo(f"plot: {path}")
    return EXIT_OK


def _say_none_read(directory: str | None) -> None:
    """A folder without the published-run files printed nothing at all (exit 0)."""
    from rigwise.validation.training import DATA_DIR

    click.echo(
        f"no training rows read from {directory}: it holds none of the published-run CSVs "
        f"rigwise reads (named as those in {DATA_DIR})."
    )


def _print_stats(stats: list[dict[str, Any]]) -> None:
    role = None
    for entry in stats:
        if entry["role"] != role:
            role = entry["role"]
            click.echo(f"\n{ROLE_HEADINGS.get(role, role)}")
            click.echo(
                f"{'source':40} {'metric':24} {'rows':>4} {'median':>7} {'mean':>7} "
                f"{'p90':>7} {'bias':>7} {'in P10-P90':>11}"
            )
        covered = entry["interval_coverage"]
        ranged = "-" if covered is None else f"{covered:.0%} of {entry['interval_rows']}"
        click.echo(
            f"{entry['source']:40} {entry['metric']:24} {entry['rows']:>4} "
            f"{entry['median_abs_error_pct']:6.1f}% {entry['mean_abs_error_pct']:6.1f}% "
            f"{entry['p90_abs_error_pct']:6.1f}% {entry['median_error_pct']:+6.1f}% {ranged:>11}"
        )
