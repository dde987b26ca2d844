"""Every command and option of the CLI says what it does, in plain text.

Walks every command registered in ``cli/__init__.py`` (groups recursively): each command has a
help text, each option (and flag) a ``help=``, and no help text shows reStructuredText markup
(double backticks, ``:ref:``-style roles) that ``--help`` would print raw.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import click
import pytest

from rigwise.cli import COMMANDS, cli

_RAW_MARKUP = re.compile(r"``|:[a-z]+:`")


def _commands() -> Iterator[tuple[str, click.Command]]:
    ctx = click.Context(cli)
    stack: list[tuple[str, click.Command]] = []
    for name in COMMANDS:
        command = cli.get_command(ctx, name)
        if command is not None:
            stack.append((name, command))
    while stack:
        path, command = stack.pop()
        yield path, command
        if isinstance(command, click.Group):
            sub = click.Context(command)
            for name in command.list_commands(sub):
                child = command.get_command(sub, name)
                if child is not None:
                    stack.append((f"{path} {name}", child))


ALL = sorted(_commands(), key=lambda item: item[0])


def test_every_registered_command_was_found() -> None:
    assert {path for path, _ in ALL} >= set(COMMANDS)


@pytest.mark.parametrize(("path", "command"), ALL, ids=[f"rigwise {path}" for path, _ in ALL])
def test_command_and_every_option_have_help(path: str, command: click.Command) -> None:
    assert (command.help or command.short_help or "").strip(), f"`rigwise {path}` has no help"
    missing = [
        param.opts[0]
        for param in command.params
        if isinstance(param, click.Option) and not param.hidden and not (param.help or "").strip()
    ]
    assert missing == [], f"`rigwise {path}` options without --help text: {missing}"


@pytest.mark.parametrize(("path", "command"), ALL, ids=[f"rigwise {path}" for path, _ in ALL])
def test_help_shows_no_raw_markup(path: str, command: click.Command) -> None:
    texts = [command.help or "", command.short_help or ""]
    texts += [p.help or "" for p in command.params if isinstance(p, click.Option)]
    raw = [t for t in texts if _RAW_MARKUP.search(t)]
    assert raw == [], f"`rigwise {path}` help shows raw markup: {raw}"
