"""``rigwise grid`` commands for what the grid holds and produces: datasets, the credit ledger,
the leaderboard, evaluations and runs of its models (registered on the ``grid`` group)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click

from rigwise.cli._common import print_json
from rigwise.cli.grid import _cell, _client, _table, client_options, grid


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
