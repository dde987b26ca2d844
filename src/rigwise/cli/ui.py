"""`rigwise ui`: serve the local web UI (binds to 127.0.0.1 unless told otherwise)."""

from __future__ import annotations

import os

import click

from rigwise.cli._common import fail, print_json


def _check_address(host: str, port: int) -> None:
    """Bind ``host:port`` once before serving: a name that does not resolve, an address not on
    this machine or a port in use printed 'rigwise UI on http://...' then uvicorn's own
    'ERROR: [Errno -2] ...' and exit 3."""
    import errno
    import socket

    try:
        family, kind, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        with socket.socket(family, kind) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
            sock.bind(address)
    except OSError as exc:
        in_use = exc.errno == errno.EADDRINUSE
        fail(
            f"Cannot serve the UI on {host}:{port} ({exc.strerror or exc}).",
            hint="Pick another --port, or stop what is using it."
            if in_use
            else "Give an address of this machine as --host, e.g. 127.0.0.1 (or 0.0.0.0).",
        )


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
@click.option(
    "--json", "as_json", is_flag=True, help="Print the address served and errors as JSON."
)
def ui(host: str, port: int, grid_url: str | None, grid_token: str | None, as_json: bool) -> None:
    """Serve the web UI: Compare, Run, Train, Build, My machine, Grid."""
    import uvicorn

    from rigwise.web.app import create_app

    _check_address(host, port)
    if grid_url and grid_token:
        os.environ["RIGWISE_GRID_URL"], os.environ["RIGWISE_GRID_TOKEN"] = grid_url, grid_token
    url = f"http://{host}:{port}/"
    if as_json:
        print_json({"url": url})
    else:
        click.echo(f"rigwise UI on {url}  (Ctrl-C stops it)")
    # SIGTERM/Ctrl-C: stop accepting, give running requests 5 s (each is bounded; see
    # web/limits.py), then exit, so a service manager's stop never hangs.
    uvicorn.run(
        create_app(), host=host, port=port, log_level="warning", timeout_graceful_shutdown=5
    )
