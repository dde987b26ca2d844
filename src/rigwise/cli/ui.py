"""`rigwise ui`: serve the local web UI (binds to 127.0.0.1 unless told otherwise)."""

from __future__ import annotations

import os

import click


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option(
    "--port",
    default=8300,
    show_default=True,
    type=click.IntRange(1, 65535),
    help="Port to serve the UI on.",
)
@click.option("--grid-url", envvar="RIGWISE_GRID_URL", help="A grid coordinator to show.")
@click.option("--grid-token", envvar="RIGWISE_GRID_TOKEN", help="Its token.")
def ui(host: str, port: int, grid_url: str | None, grid_token: str | None) -> None:
    """Serve the web UI: Compare, Run, Train, Build, My machine, Grid."""
    import uvicorn

    from rigwise.web.app import create_app

    if grid_url and grid_token:
        os.environ["RIGWISE_GRID_URL"], os.environ["RIGWISE_GRID_TOKEN"] = grid_url, grid_token
    click.echo(f"rigwise UI on http://{host}:{port}/  (Ctrl-C stops it)")
    # SIGTERM/Ctrl-C: stop accepting, give running requests 5 s (each is bounded; see
    # web/limits.py), then exit, so a service manager's stop never hangs.
    uvicorn.run(
        create_app(), host=host, port=port, log_level="warning", timeout_graceful_shutdown=5
    )
