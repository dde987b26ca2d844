"""``rigwise grid`` commands for what the grid holds and produces: datasets, the credit ledger,
the leaderboard, evaluations and runs of its models (registered on the ``grid`` group)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click

from rigwise.cli._common import print_json
from rigwise.cli.grid_common import cell, client_options, grid_client, table


@click.group()
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
    file = Path(path)
    if not file.is_file():  # /dev/zero or a pipe was read until memory ran out
        from rigwise.cli._common import fail

        fail(f"{path!r} is not a regular file.", hint="Give the path of the file to upload.")
    manifest = grid_client(url, token).data_put(name or file.name, file.read_bytes(), replicas)
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
    blob = grid_client(url, token).data_get(name)
    Path(output).write_bytes(blob)
    answer = {"name": name, "bytes": len(blob), "output": output}
    print_json(answer) if as_json else click.echo(f"wrote {len(blob)} bytes to {output}")


@data.command("ls")
@client_options
def data_ls(url: str | None, token: str | None, as_json: bool) -> None:
    """Datasets and model artifacts on the grid."""
    rows = grid_client(url, token).data_ls()
    if as_json:
        print_json(rows)
    else:
        table(rows, ["name", "size_bytes", "chunks", "stores", "sha256"], "grid datasets")


@click.group("credits", invoke_without_command=True)
@client_options
@click.pass_context
def credits_command(ctx: click.Context, url: str | None, token: str | None, as_json: bool) -> None:
    """Balances and the append-only ledger (refused if its hash chain does not check out)."""
    if ctx.invoked_subcommand is not None:
        return
    answer = grid_client(url, token).credits()
    if as_json:
        print_json(answer)
        return
    rows = [{"account": k, "balance": v} for k, v in answer["balances"].items()]
    table(rows, ["account", "balance"], "credit balances")
    table(
        answer["entries"][-20:],
        ["id", "account", "amount", "kind", "job_id", "node_id"],
        "ledger (last 20)",
    )


@credits_command.command("verify")
@click.option(
    "--data-dir", default="./rigwise-grid", show_default=True, help="The grid's state folder."
)
@click.option("--db", "db_url", default=None, help="Database URL (default: SQLite in data dir).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def credits_verify(data_dir: str, db_url: str | None, as_json: bool) -> None:
    """Check the ledger's hash chain in the coordinator's database: exit 0 when intact, 1 with
    the first altered, inserted or missing entry otherwise (run it on the coordinator)."""
    from rigwise.grid.ledger import verify_store

    verdict = verify_store(Path(data_dir), db_url).to_dict()
    if as_json:
        print_json(verdict)
    elif verdict["ok"]:
        click.echo(f"ledger intact: {verdict['entries']} entries, hash chain verified")
    else:
        click.echo(f"ledger ALTERED: {verdict['problem']}")
    if not verdict["ok"]:
        raise SystemExit(1)


@click.command("models")
@client_options
def models_command(url: str | None, token: str | None, as_json: bool) -> None:
    """The leaderboard: models ranked by grid-run held-out perplexity."""
    rows = grid_client(url, token).models()
    if as_json:
        print_json(rows)
        return
    from rigwise.grid.harness import summary

    columns = ["rank", "id", "name", "owner", "perplexity", "eval_dataset"]
    if any(row.get("tasks") for row in rows):
        rows = [{**row, "tasks": summary(row.get("tasks") or {})} for row in rows]
        columns.append("tasks")
    table(rows, columns, "leaderboard")


def _wait(client: Any, job_id: str, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        answer: dict[str, Any] = client.job(job_id)
        if answer["state"] in ("succeeded", "failed", "cancelled") or time.monotonic() > deadline:
            return answer
        time.sleep(1.0)


@click.command("eval")
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
    client = grid_client(url, token)
    names = [name.strip() for name in tasks.split(",") if name.strip()]
    answer = client.evaluate(model, dataset, names)
    if wait:
        answer = _wait(client, answer["id"], 3600)
    print_json(answer) if as_json else click.echo(
        f"job {answer['id']}: {answer['state']} {cell(answer.get('result'))}"
    )


@click.command("run")
@click.argument("model", default="best")
@click.option("--prompt", default="", help="Text to continue.")
@click.option("--tokens", default=64, show_default=True, help="Tokens to generate.")
@client_options
def run_command(
    model: str, prompt: str, tokens: int, url: str | None, token: str | None, as_json: bool
) -> None:
    """Run inference on a model ('best' = top of the leaderboard) on the grid's Ray Serve."""
    client = grid_client(url, token)
    answer = _wait(client, client.run(model, prompt, tokens)["id"], 3600)
    if as_json:
        print_json(answer)
    elif answer["state"] == "succeeded":
        click.echo(answer["result"]["text"])
    else:
        click.echo(f"job {answer['id']}: {answer['state']} {answer['reason']}")
        raise SystemExit(1)


COMMANDS = (data, credits_command, models_command, eval_command, run_command)
