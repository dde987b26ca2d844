"""`rigwise validate inference|training [DIR]`: predictions against published measurements."""

from __future__ import annotations

import importlib

import click

_SUBCOMMANDS = {
    "inference": "rigwise.cli.validate_inference:command",
    "training": "rigwise.cli.validate_training:command",
    "intervals": "rigwise.cli.validate_intervals:command",
}


class _LazyValidate(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(_SUBCOMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = _SUBCOMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attribute = target.split(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError:
            return None
        command = getattr(module, attribute)
        assert isinstance(command, click.Command)
        # the checks every other command gets where it is registered (a blank --plot-dir ' '
        # made a folder ' '; --plot-dir was no NotBlank, as the sweep never reached here)
        from rigwise.cli._common import harden_params

        return harden_params(command)


@click.group(cls=_LazyValidate)
def validate() -> None:
    """Check rigwise's predictions against published measurements."""
