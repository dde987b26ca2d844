"""The ``rigwise`` command line: a thin layer over the public API.

Subcommands live one module each in this package and are imported only when used, so that
``rigwise infer`` does not pay for ``ray`` or ``fastapi``. Exit codes: 0 ok, 1 nothing
feasible, 2 bad input or environment.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any

import click

from rigwise.cli._common import run_guarded

# command name -> "module:attribute"; a module that is not there (yet) is simply not listed.
COMMANDS: dict[str, str] = {
    "gpus": "rigwise.cli.gpus:gpus",
    "gpu": "rigwise.cli.gpus:gpu",
    "model": "rigwise.cli.model:model",
    "models": "rigwise.cli.model:models",
    "infer": "rigwise.cli.infer:infer",
    "train": "rigwise.cli.train:train",
    "validate": "rigwise.cli.validate:validate",
    "build": "rigwise.cli.build:build",
    "rig": "rigwise.cli.build:rig",
    "probe": "rigwise.cli.probe:probe",
    "bench": "rigwise.cli.probe:bench",
    "monitor": "rigwise.cli.probe:monitor",
    "grid": "rigwise.cli.grid:grid",
    "ui": "rigwise.cli.ui:ui",
    "demo": "rigwise.cli.demo:demo",
    "oi": "rigwise.cli.oi:oi",
}


def _available(target: str) -> bool:
    return importlib.util.find_spec(target.split(":")[0]) is not None


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name, target in COMMANDS.items() if _available(target)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None or not _available(target):
            return None
        module_name, attribute = target.split(":")
        command = getattr(importlib.import_module(module_name), attribute)
        assert isinstance(command, click.Command)
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            from rigwise.errors import closest

            options = closest(name, self.list_commands(ctx))
            ctx.fail(f"Unknown command {name!r}. Did you mean: {', '.join(options)}?")
        return super().resolve_command(ctx, args)


@click.group(cls=LazyGroup, invoke_without_command=True)
@click.version_option(package_name="rigwise")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """rigwise: will it run, how fast, what to buy, and how to pool it.

    Run without a command for a tour on the packaged catalog.
    """
    if ctx.invoked_subcommand is None:
        demo = COMMANDS["demo"]
        if _available(demo):
            ctx.invoke(LazyGroup.get_command(cli, ctx, "demo"))  # type: ignore[arg-type]
        else:
            click.echo(ctx.get_help())


def main(argv: list[str] | None = None) -> Any:
    """Console-script entry point."""
    return run_guarded(lambda: cli.main(args=argv, prog_name="rigwise", standalone_mode=False))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
