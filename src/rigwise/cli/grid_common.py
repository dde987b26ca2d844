"""Helpers shared by the ``rigwise grid`` command modules: the client from options or the
saved credential, the common client options, and table rendering."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from rigwise.cli._common import console

CREDENTIAL = Path("~/.config/rigwise/grid.json")


def grid_client(url: str | None, token: str | None) -> Any:
    from rigwise.grid.client import GridClient

    saved = CREDENTIAL.expanduser()
    if (not url or not token) and saved.exists():
        stored = json.loads(saved.read_text(encoding="utf-8"))
        url, token = url or stored.get("url"), token or stored.get("token")
    return GridClient(url, token)


def client_options(command: Callable[..., Any]) -> Callable[..., Any]:
    command = click.option("--json", "as_json", is_flag=True, help="Print JSON.")(command)
    command = click.option("--token", envvar="RIGWISE_GRID_TOKEN", help="Grid token.")(command)
    return click.option("--url", envvar="RIGWISE_GRID_URL", help="Coordinator URL.")(command)


def table(rows: list[dict[str, Any]], columns: list[str], title: str) -> None:
    from rich.table import Table

    table = Table(title=title)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*[cell(row.get(column)) for column in columns])
    console().print(table)


def cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list | dict):
        return json.dumps(value)[:60]
    return "" if value is None else str(value)
