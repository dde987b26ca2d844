"""``rigwise grid``: start a coordinator, join machines, submit jobs, datasets, credits, models.

Thin: options -> ``rigwise.grid`` (client or coordinator) -> a table or ``--json``. Client
commands take ``--url``/``--token`` or ``RIGWISE_GRID_URL``/``RIGWISE_GRID_TOKEN``; after
``grid join`` the node's saved credential is used when neither is given.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from rigwise.cli._common import console, print_json

_CREDENTIAL = Path("~/.config/rigwise/grid.json")


def _client(url: str | None, token: str | None) -> Any:
    from rigwise.grid.client import GridClient

    saved = _CREDENTIAL.expanduser()
    if (not url or not token) and saved.exists():
        stored = json.loads(saved.read_text(encoding="utf-8"))
        url, token = url or stored.get("url"), token or stored.get("token")
    return GridClient(url, token)


def client_options(command: Callable[..., Any]) -> Callable[..., Any]:
    command = click.option("--json", "as_json", is_flag=True, help="Print JSON.")(command)
    command = click.option("--token", envvar="RIGWISE_GRID_TOKEN", help="Grid token.")(command)
    return click.option("--url", envvar="RIGWISE_GRID_URL", help="Coordinator URL.")(command)


def _table(rows: list[dict[str, Any]], columns: list[str], title: str) -> None:
    from rich.table import Table

    table = Table(title=title)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*[_cell(row.get(column)) for column in columns])
    console().print(table)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list | dict):
        return json.dumps(value)[:60]
    return "" if value is None else str(value)


@click.group()
def grid() -> None:
    """Pool machines into a grid on Ray: admission, jobs, datasets, credits, leaderboard."""


@grid.command()
@click.option("--data-dir", default="./rigwise-grid", show_default=True, help="State folder.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Grid network address.")
@click.option("--port", default=8765, show_default=True, help="API port.")
@click.option("--db", "db_url", default=None, help="Database URL (default SQLite in data dir).")
@click.option("--ray-address", default=None, help="Attach to this Ray head instead.")
@click.option("--ray-port", default=6380, show_default=True, help="Ray head port.")
@click.option("--replicas", default=2, show_default=True, help="Copies of each dataset chunk.")
@click.option("--policy", "policy_file", default=None, help="Admission policy YAML.")
@click.option("--store", "stores", multiple=True, help="Dataset store directory (NAS mount).")
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
    )

    def ready(join_token: str) -> None:
        click.echo(f"join token: {join_token}")
        click.echo(f"admin token written to {config.admin_token_path}")
        click.echo(f"coordinator: {config.url}")
        click.echo(f"join a machine: rigwise grid join {config.url} --token <join token>")

    start(config, ray_port, ready)


@grid.command()
@click.option("--data-dir", default="./rigwise-grid", show_default=True, help="State folder.")
def down(data_dir: str) -> None:
    """Stop this machine's Ray processes after ``grid up`` (the state in DATA_DIR is kept)."""
    from rigwise.errors import InputError
    from rigwise.grid.config import RAY_TOKEN_FILE
    from rigwise.grid.ray_adapter import stop_ray

    token_file = Path(data_dir) / RAY_TOKEN_FILE
    if not token_file.is_file():
        raise InputError(
            f"No grid in {data_dir!r} ({RAY_TOKEN_FILE} not found).",
            hint="Pass the --data-dir that `rigwise grid up` used.",
        )
    stop_ray(token_file.read_text().strip())
    click.echo(f"ray stopped; grid state kept in {data_dir}")


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
    """Nodes with their state (admitted/rejected/lost), reasons and resources."""
    rows = _client(url, token).nodes()
    if as_json:
        print_json(rows)
    else:
        _table(rows, ["id", "name", "owner", "state", "reasons", "labels"], "grid nodes")


@grid.command()
@click.argument("job_file", type=click.Path(exists=True, dir_okay=False))
@client_options
def submit(job_file: str, url: str | None, token: str | None, as_json: bool) -> None:
    """Submit a job template (YAML); prints its id and placement."""
    from rigwise.grid.jobs import read_job_text

    data = read_job_text(Path(job_file).read_text(encoding="utf-8"), job_file)
    answer = _client(url, token).submit(data)
    if as_json:
        print_json(answer)
    else:
        click.echo(f"job {answer['id']} {answer['state']}: {answer['placement']['reason']}")


@grid.command("jobs")
@client_options
def jobs_command(url: str | None, token: str | None, as_json: bool) -> None:
    """All jobs."""
    rows = _client(url, token).jobs()
    if as_json:
        print_json(rows)
    else:
        _table(rows, ["id", "name", "kind", "state", "node", "attempts", "reason"], "grid jobs")


@grid.command()
@click.argument("job_id")
@client_options
def job(job_id: str, url: str | None, token: str | None, as_json: bool) -> None:
    """One job: state (queued/running/succeeded/failed/cancelled), node, result."""
    answer = _client(url, token).job(job_id)
    if as_json:
        print_json(answer)
    else:
        for key, value in answer.items():
            click.echo(f"{key}: {_cell(value)}")


@grid.command()
@click.argument("job_id")
@client_options
def logs(job_id: str, url: str | None, token: str | None, as_json: bool) -> None:
    """Events and output of a job."""
    rows = _client(url, token).logs(job_id)
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
    answer = _client(url, token).cancel(job_id)
    print_json(answer) if as_json else click.echo(f"job {job_id}: {answer['state']}")


@grid.group()
def data() -> None:
    """Datasets: content-addressed, chunked, replicated, verified on read."""


@data.command("put")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--name", default=None, help="Dataset name (default: file name).")
@click.option("--replicas", default=None, type=int, help="Copies of each chunk.")
@client_options
def data_put(
    path: str,
    name: str | None,
    replicas: int | None,
    url: str | None,
    token: str | None,
    as_json: bool,
) -> None:
    """Upload a file as a dataset."""
    manifest = _client(url, token).data_put(
        name or Path(path).name, Path(path).read_bytes(), replicas
    )
    if as_json:
        print_json(manifest)
    else:
        click.echo(
            f"{manifest['name']}: {manifest['size_bytes']} bytes, "
            f"{len(manifest['chunks'])} chunk(s) x {len(manifest['stores'])} replica(s) "
            f"on {', '.join(manifest['stores'])}, sha256 {manifest['sha256']}"
        )
        if len(manifest["stores"]) < manifest["replicas"]:
            click.echo(
                f"  under-replicated: {len(manifest['stores'])} of {manifest['replicas']} copies;"
                " more are made as storage nodes join (rigwise grid join --storage DIR)"
            )


@data.command("get")
@click.argument("name")
@click.option("-o", "--output", required=True, help="File to write.")
@client_options
def data_get(name: str, output: str, url: str | None, token: str | None, as_json: bool) -> None:
    """Download a dataset (verified chunk by chunk on the coordinator)."""
    blob = _client(url, token).data_get(name)
    Path(output).write_bytes(blob)
    answer = {"name": name, "bytes": len(blob), "output": output}
    print_json(answer) if as_json else click.echo(f"wrote {len(blob)} bytes to {output}")


@data.command("ls")
@client_options
def data_ls(url: str | None, token: str | None, as_json: bool) -> None:
    """Datasets and model artifacts on the grid."""
    rows = _client(url, token).data_ls()
    if as_json:
        print_json(rows)
    else:
        _table(rows, ["name", "size_bytes", "chunks", "stores", "sha256"], "grid datasets")


@grid.command("credits")
@client_options
def credits_command(url: str | None, token: str | None, as_json: bool) -> None:
    """Balances and the append-only ledger."""
    answer = _client(url, token).credits()
    if as_json:
        print_json(answer)
        return
    rows = [{"account": k, "balance": v} for k, v in answer["balances"].items()]
    _table(rows, ["account", "balance"], "credit balances")
    _table(
        answer["entries"][-20:],
        ["id", "account", "amount", "kind", "job_id", "node_id"],
        "ledger (last 20)",
    )


@grid.command("models")
@client_options
def models_command(url: str | None, token: str | None, as_json: bool) -> None:
    """The leaderboard: models ranked by grid-run held-out perplexity."""
    rows = _client(url, token).models()
    if as_json:
        print_json(rows)
        return
    from rigwise.grid.harness import summary

    columns = ["rank", "id", "name", "owner", "perplexity", "eval_dataset"]
    if any(row.get("tasks") for row in rows):
        rows = [{**row, "tasks": summary(row.get("tasks") or {})} for row in rows]
        columns.append("tasks")
    _table(rows, columns, "leaderboard")


def _wait(client: Any, job_id: str, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        answer: dict[str, Any] = client.job(job_id)
        if answer["state"] in ("succeeded", "failed", "cancelled") or time.monotonic() > deadline:
            return answer
        time.sleep(1.0)


@grid.command("eval")
@click.argument("model")
@click.option("--dataset", required=True, help="Grid dataset whose held-out tail grades it.")
@click.option("--tasks", default="", help="lm-eval tasks as NAME,grid:DATASET,... (see docs).")
@click.option("--wait/--no-wait", default=True, show_default=True, help="Wait for the score.")
@client_options
def eval_command(
    model: str,
    dataset: str,
    tasks: str,
    wait: bool,
    url: str | None,
    token: str | None,
    as_json: bool,
) -> None:
    """Have the grid evaluate a model: held-out perplexity on a grid dataset, plus any
    lm-evaluation-harness tasks."""
    client = _client(url, token)
    names = [name.strip() for name in tasks.split(",") if name.strip()]
    answer = client.evaluate(model, dataset, names)
    if wait:
        answer = _wait(client, answer["id"], 3600)
    print_json(answer) if as_json else click.echo(
        f"job {answer['id']}: {answer['state']} {_cell(answer.get('result'))}"
    )


@grid.command("run")
@click.argument("model", default="best")
@click.option("--prompt", default="", help="Text to continue.")
@click.option("--tokens", default=64, show_default=True, help="Tokens to generate.")
@client_options
def run_command(
    model: str, prompt: str, tokens: int, url: str | None, token: str | None, as_json: bool
) -> None:
    """Run inference on a model (``best`` = top of the leaderboard) on the grid's Ray Serve."""
    client = _client(url, token)
    answer = _wait(client, client.run(model, prompt, tokens)["id"], 3600)
    if as_json:
        print_json(answer)
    elif answer["state"] == "succeeded":
        click.echo(answer["result"]["text"])
    else:
        click.echo(f"job {answer['id']}: {answer['state']} {answer['reason']}")
        raise SystemExit(1)
