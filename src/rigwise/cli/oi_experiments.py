"""``rigwise oi experiments``: the experiment queue (submit, list, cancel, results), and the
options and store helpers every ``rigwise oi`` command shares (``cli.oi`` imports them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from rigwise.cli._common import EXIT_INFEASIBLE, fail, print_json

DB_HELP = (
    "The O.I. store (SQLite); default: oi.sqlite3 in the rigwise data dir ($RIGWISE_DATA_DIR)."
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
db_option = click.option("--db", type=click.Path(dir_okay=False), default=None, help=DB_HELP)
constants_option = click.option(
    "--constants",
    type=click.Path(dir_okay=False),
    default=None,
    help="A lab's own copy of the constants file (default: the packaged oi/data/plant.yaml).",
)


def _store(db: str | None) -> Any:
    from rigwise.oi.store import Store, default_db_path

    path = Path(db) if db else default_db_path()
    if not db:
        path.parent.mkdir(parents=True, exist_ok=True)
    return Store(path)


def _existing_store(db: str | None) -> Any:
    from rigwise.oi.store import default_db_path

    path = Path(db) if db else default_db_path()
    if not path.is_file():
        fail(f"No O.I. store at {str(path)!r}. Run `rigwise oi init --db {path}` first.")
    return _store(str(path))


@click.group()
def experiments() -> None:
    """The experiment queue (Neuroplatform-like): submit, list, cancel, results."""


def _now(store: Any) -> float:
    last = store.last_event()
    return 0.0 if last is None else float(last.t_s)


@experiments.command("submit")
@click.argument("file", type=click.Path(dir_okay=False))
@db_option
@constants_option
@json_option
def experiments_submit(file: str, db: str | None, constants: str | None, as_json: bool) -> None:
    """Queue the experiment in FILE (YAML; see docs/oi.md). `oi run` admits and runs it."""
    from rigwise.oi.constants import load_constants
    from rigwise.oi.experiments import get, submit

    path = Path(file)
    if not path.exists():  # a device: read_user_text says 'is not a regular file'
        fail(f"Experiment file {file!r} not found. Give the path of a YAML file.")
    store = _store(db)
    from rigwise.validate_input import read_user_text

    text = read_user_text(path, "experiment file")
    exp_id = submit(store, load_constants(constants), text, _now(store))
    exp = get(store, exp_id)
    if as_json:
        print_json(exp)
    else:
        click.echo(f"{exp_id} queued ({exp['spec']['name']})")


@experiments.command("list")
@db_option
@json_option
def experiments_list(db: str | None, as_json: bool) -> None:
    """Experiments with their state and the reason of the last refusal."""
    from rigwise.oi.experiments import listing

    rows = listing(_existing_store(db))
    if as_json:
        print_json(rows)
        return
    for r in rows:
        click.echo(f"{r['id']:<20} {r['state']:<10} {r['spec']['name']:<24} {r['reason']}")
    if not rows:
        click.echo("no experiments")


@experiments.command("cancel")
@click.argument("exp_id")
@db_option
@json_option
def experiments_cancel(exp_id: str, db: str | None, as_json: bool) -> None:
    """Cancel a queued or admitted experiment (its lease is released)."""
    from rigwise.oi.experiments import cancel

    store = _existing_store(db)
    exp = cancel(store, exp_id, _now(store))
    if as_json:
        print_json(exp)
    else:
        click.echo(f"{exp_id} cancelled")


@experiments.command("results")
@click.argument("exp_id")
@db_option
@json_option
def experiments_results(exp_id: str, db: str | None, as_json: bool) -> None:
    """Spike counts per recording window, the environment series and the provenance (exit 1
    while the experiment has no results: queued, running, failed or cancelled)."""
    from rigwise.oi.experiments import get

    exp = get(_existing_store(db), exp_id)
    if as_json:
        print_json(exp)
    else:
        click.echo(f"{exp_id}: {exp['state']} {exp['reason']}")
        for w in (exp["result"] or {}).get("windows", []):
            total = sum(w["spike_counts"].values())
            click.echo(f"  window {w['start_s']:g}-{w['end_s']:g} s: {total} spikes")
    if exp["state"] != "completed":
        raise SystemExit(EXIT_INFEASIBLE)
