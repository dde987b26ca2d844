"""``rigwise grid``: start a coordinator, join machines, submit jobs, datasets, credits, models.

Thin: options -> ``rigwise.grid`` (client or coordinator) -> a table or ``--json``. Client
commands take ``--url``/``--token`` or ``RIGWISE_GRID_URL``/``RIGWISE_GRID_TOKEN``; after
``grid join`` the node's saved credential is used when neither is given.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import click

from rigwise.cli import grid_results
from rigwise.cli._common import PORT, print_json
from rigwise.cli.grid_common import cell, client_options, grid_client, table


@click.group()
def grid() -> None:
    """Pool machines into a grid on Ray: admission, jobs, datasets, credits, leaderboard."""


@grid.command()
@click.option("--data-dir", default="./rigwise-grid", show_default=True, help="State folder.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Grid network address.")
@click.option("--port", default=8765, show_default=True, type=PORT, help="API port.")
@click.option("--db", "db_url", default=None, help="Database URL (default SQLite in data dir).")
@click.option("--ray-address", default=None, help="Attach to this Ray head instead.")
@click.option("--ray-port", default=6380, show_default=True, type=PORT, help="Ray head port.")
@click.option("--replicas", default=2, show_default=True, help="Copies of each dataset chunk.")
@click.option("--policy", "policy_file", default=None, help="Admission policy YAML.")
@click.option("--store", "stores", multiple=True, help="Dataset store directory (NAS mount).")
@click.option(
    "--max-upload-mib",
    default=256,
    show_default=True,
    type=click.IntRange(1, 1 << 20),
    help="Largest dataset upload accepted (MiB); larger ones get HTTP 413.",
)
def up(
    data_dir: str,
    host: str,
    port: int,
    db_url: str | None,
    ray_address: str | None,
    ray_port: int,
    replicas: int,
    policy_file: str | None,
    stores: tuple[str, ...],
    max_upload_mib: int,
) -> None:
    """Start the coordinator (API + Ray head) and print the join token."""
    from rigwise.grid.config import make_config
    from rigwise.grid.coordinator import start

    config = make_config(
        data_dir,
        db_url=db_url,
        host=host,
        port=port,
        ray_address=ray_address,
        replicas=replicas,
        policy_file=policy_file,
        store_dirs=stores,
        max_upload_bytes=max_upload_mib * 2**20,
    )

    def ready(join_token: str) -> None:
        click.echo(f"join token: {join_token}")
        click.echo(f"admin token written to {config.admin_token_path}")
        click.echo(f"coordinator: {config.url}")
        click.echo(f"join a machine: rigwise grid join {config.url} --token <join token>")

    start(config, ray_port, ready)


@grid.command()
@click.option("--data-dir", default="./rigwise-grid", show_default=True, help="State folder.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def down(data_dir: str, as_json: bool) -> None:
    """Stop the Ray processes 'grid up' started for DATA_DIR (its head, and this machine's
    members of that grid) and nothing else: other Ray clusters keep running. State is kept."""
    from rigwise.errors import InputError
    from rigwise.grid.config import RAY_TOKEN_FILE

    root = Path(data_dir)
    if not (root / RAY_TOKEN_FILE).is_file():
        raise InputError(
            f"No grid in {data_dir!r} ({RAY_TOKEN_FILE} not found).",
            hint="Pass the --data-dir that `rigwise grid up` used.",
        )
    from rigwise.grid.ray_adapter import read_started, stop_started

    started = read_started(root)
    stopped = stop_started(root)
    answer = {"data_dir": data_dir, "address": (started or {}).get("address"), "stopped": stopped}
    if as_json:
        print_json(answer)
    elif started is None:
        click.echo(f"no Ray processes recorded in {data_dir} (none started, or already stopped)")
    else:
        click.echo(f"stopped {stopped} Ray process(es) of {started['address']}; state kept")


@grid.command()
@click.argument("url")
@click.option("--token", required=True, envvar="RIGWISE_GRID_JOIN_TOKEN", help="Join token.")
@click.option("--name", default=None, help="Node name (default: host name).")
@click.option("--owner", default=None, help="Account credited for this node's work.")
@click.option("--site", default="default", show_default=True, help="Site label.")
@click.option("--switch", default="default", show_default=True, help="Network switch label.")
@click.option("--label", "labels", multiple=True, help="Extra label KEY=VALUE (repeatable).")
@click.option("--storage", default="", help="Hold grid datasets in this directory (storage role).")
@click.option("--no-ray", is_flag=True, help="Ask for admission only; do not start Ray.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def join(
    url: str,
    token: str,
    name: str | None,
    owner: str | None,
    site: str,
    switch: str,
    labels: tuple[str, ...],
    storage: str,
    no_ray: bool,
    as_json: bool,
) -> None:
    """Probe and benchmark this machine, ask to join, start its Ray worker if admitted."""
    import getpass
    import socket

    from rigwise.errors import InputError
    from rigwise.grid import agent, measure
    from rigwise.grid.client import GridClient

    extra = {}
    for item in labels:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InputError(f"Label {item!r} is not KEY=VALUE.", hint="Use --label rack=r1.")
        extra[key] = value
    if storage and not (Path(storage).is_dir() and os.access(storage, os.W_OK)):
        raise InputError(
            f"Storage directory {storage!r} is not a writable directory.",
            hint="Create it first (mkdir -p DIR), or mount the disk there.",
        )
    client = GridClient(url, token)
    starter = None if no_ray else agent.start_ray_worker(url)
    answer = agent.join(
        client,
        measure.ProbeFacts(site, switch, storage=storage),
        name or socket.gethostname(),
        owner or getpass.getuser(),
        extra,
        starter,
        stop_ray=None if no_ray else agent.stop_ray_worker,
    )
    if "credential" in answer and answer["state"] != "rejected":
        where = agent.save_credential(answer, url)
        answer["credential_file"] = str(where)
    answer = {k: v for k, v in answer.items() if k not in ("credential", "ray_token")}
    if as_json:
        print_json(answer)
    else:
        click.echo(f"node {answer['id']}: {answer['state']}")
        for reason in answer["reasons"]:
            click.echo(f"  failed: {reason}")
        if answer["state"] == "verifying":
            click.echo("  the grid measures this machine itself once its Ray worker runs")
    if answer["state"] == "rejected":
        raise SystemExit(1)


@grid.command()
@client_options
def nodes(url: str | None, token: str | None, as_json: bool) -> None:
    """Nodes with their state (verifying/admitted/rejected/lost), reasons and resources."""
    rows = grid_client(url, token).nodes()
    if as_json:
        print_json(rows)
    else:
        table(rows, ["id", "name", "owner", "state", "reasons", "labels"], "grid nodes")


@grid.command()
@click.argument("node_id")
@client_options
def node(node_id: str, url: str | None, token: str | None, as_json: bool) -> None:
    """One node: the grid's own measurement of it, each check against claim and policy."""
    record = grid_client(url, token).node(node_id)
    if as_json:
        print_json(record)
        return
    verification = record.get("verification", {})
    click.echo(f"node {record['id']} ({record['name']}): {record['state']}")
    click.echo(f"  grid verification: {verification.get('state', 'not run')}")
    for check in verification.get("checks", []):
        click.echo(f"  {'ok    ' if check['passed'] else 'FAILED'} {check['message']}")


@grid.command()
@click.argument("job_file", type=click.Path(exists=True, dir_okay=False))
@client_options
def submit(job_file: str, url: str | None, token: str | None, as_json: bool) -> None:
    """Submit a job template (YAML); prints its id and placement."""
    from rigwise.grid.jobs import read_job_text
    from rigwise.validate_input import read_user_text

    data = read_job_text(read_user_text(job_file, "job file"), job_file)
    answer = grid_client(url, token).submit(data)
    if as_json:
        print_json(answer)
    else:
        click.echo(f"job {answer['id']} {answer['state']}: {answer['placement']['reason']}")


@grid.command("jobs")
@client_options
def jobs_command(url: str | None, token: str | None, as_json: bool) -> None:
    """All jobs."""
    rows = grid_client(url, token).jobs()
    if as_json:
        print_json(rows)
    else:
        table(rows, ["id", "name", "kind", "state", "node", "attempts", "reason"], "grid jobs")


@grid.command()
@click.argument("job_id")
@client_options
def job(job_id: str, url: str | None, token: str | None, as_json: bool) -> None:
    """One job: state (queued/running/succeeded/failed/cancelled), node, result."""
    answer = grid_client(url, token).job(job_id)
    if as_json:
        print_json(answer)
    else:
        for key, value in answer.items():
            click.echo(f"{key}: {cell(value)}")


@grid.command()
@click.argument("job_id")
@client_options
def logs(job_id: str, url: str | None, token: str | None, as_json: bool) -> None:
    """Events and output of a job."""
    rows = grid_client(url, token).logs(job_id)
    if as_json:
        print_json(rows)
    else:
        for row in rows:
            stamp = time.strftime("%H:%M:%S", time.localtime(row["time"]))
            click.echo(f"{stamp} {row['message']}")


@grid.command()
@click.argument("job_id")
@client_options
def cancel(job_id: str, url: str | None, token: str | None, as_json: bool) -> None:
    """Cancel a queued or running job."""
    answer = grid_client(url, token).cancel(job_id)
    print_json(answer) if as_json else click.echo(f"job {job_id}: {answer['state']}")


# datasets, credits and the leaderboard (cli/grid_results.py)
for _command in grid_results.COMMANDS:
    grid.add_command(_command)
