"""Shared pieces of the CLI: JSON output, error mapping, console."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, NoReturn

import click

from rigwise.serialize import to_jsonable

EXIT_OK = 0
EXIT_INFEASIBLE = 1
EXIT_BAD_INPUT = 2


def print_json(value: Any) -> None:
    click.echo(json.dumps(to_jsonable(value), indent=2, sort_keys=False))


def fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    raise SystemExit(code)


def run_guarded(call: Callable[[], Any]) -> int:
    """Run the click app, mapping rigwise and click errors to messages and exit codes."""
    from rigwise.errors import InputError, RigwiseError

    try:
        result = call()
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return EXIT_BAD_INPUT
    except click.ClickException as exc:
        exc.show()
        return EXIT_BAD_INPUT
    except InputError as exc:
        click.echo(f"error: {exc}", err=True)
        return EXIT_BAD_INPUT
    except RigwiseError as exc:
        click.echo(f"error: {exc}", err=True)
        return EXIT_BAD_INPUT
    except SystemExit as exc:
        return int(exc.code or 0) if not isinstance(exc.code, str) else EXIT_BAD_INPUT
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        return 130
    return int(result) if isinstance(result, int) else EXIT_OK


def console() -> Any:
    """A rich console on stdout (imported lazily; rich is a dependency)."""
    from rich.console import Console

    return Console(highlight=False, soft_wrap=False, width=None if sys.stdout.isatty() else 160)


rig_option = click.option(
    "--rig",
    type=click.Path(dir_okay=False),
    help="Plan on the GPUs and links of a rig file (see `rigwise rig check`), instead of --on.",
)


def apply_rig(options: dict[str, Any]) -> dict[str, Any]:
    """Replace ``rig`` (a rig file path) by the ``on`` text the planners take."""
    rig = options.pop("rig", None)
    if rig:
        if options.get("on") or options.get("cluster"):
            fail("Give either --rig or --on/--cluster, not both.")
        from rigwise.design.cluster import rig_on_text

        options["on"] = rig_on_text(rig)
    return options
