"""Lazy command registration: `rigwise --help` lists every command from a static table that
must say what each command's own help says, and imports none of the commands."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest

from rigwise.cli import COMMANDS, SUMMARIES, cli


def _command(name: str) -> click.Command:
    command = cli.get_command(click.Context(cli), name)
    assert command is not None
    return command


def test_every_command_has_a_summary_and_no_summary_is_stale() -> None:
    assert set(SUMMARIES) == set(COMMANDS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
@pytest.mark.parametrize("limit", [30, 45, 74, 1000])
def test_the_summary_gives_the_commands_own_short_help(name: str, limit: int) -> None:
    command = _command(name)
    assert not command.hidden and not command.deprecated
    from_table = click.Command(name, help=SUMMARIES[name]).get_short_help_str(limit)
    assert from_table == command.get_short_help_str(limit)


@pytest.mark.parametrize("width", [60, 80, 120])
def test_help_lists_every_command_as_click_would(width: int) -> None:
    ctx = click.Context(cli, terminal_width=width)
    ours, clicks = ctx.make_formatter(), ctx.make_formatter()
    cli.format_commands(ctx, ours)
    click.Group.format_commands(cli, ctx, clicks)  # imports every command for its help
    assert ours.getvalue() == clicks.getvalue()
    assert all(f"  {name} " in ours.getvalue() for name in COMMANDS)


def test_help_imports_no_command_module() -> None:
    code = (
        "import sys; from rigwise.cli import main; main(['--help']); "
        "print(sorted(m for m in sys.modules if m.startswith('rigwise.cli.') "
        "and m != 'rigwise.cli._common'), file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stderr.strip().splitlines()[-1] == "[]"
    assert "infer" in done.stdout and "oi" in done.stdout


def test_the_process_entry_point_returns_mains_code_and_freezes_what_is_left(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import gc
    import tomllib
    from pathlib import Path

    import rigwise.cli

    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert project["project"]["scripts"]["rigwise"] == "rigwise.cli:run"
    frozen: list[bool] = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(True))
    before = gc.get_threshold()
    try:
        assert rigwise.cli.run(["model", "no-such-model-at-all"]) == 2
        assert gc.get_threshold()[0] == rigwise.cli.GC_YOUNG_THRESHOLD
    finally:
        gc.set_threshold(*before)
    assert frozen == [True]
