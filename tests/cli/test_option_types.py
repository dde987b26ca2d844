"""Every text or path option and argument of every command refuses an empty or blank value the
user typed (exit 2, naming the parameter): ``--quant ''`` planned the default quant and
``--today ''`` judged prices against today, without a word. Swept over the registered commands,
so an option added later is covered without a line here."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from rigwise.cli import COMMANDS, cli, main
from rigwise.cli.option_types import NotBlank, WritableFolder


def _params() -> Iterator[tuple[list[str], click.Parameter, click.Command]]:
    ctx = click.Context(cli)
    todo: list[tuple[list[str], click.Command]] = []
    for name in COMMANDS:
        command = cli.get_command(ctx, name)
        if command is not None:
            todo.append(([name], command))
    while todo:
        path, command = todo.pop()
        yield from ((path, p, command) for p in command.params)
        if isinstance(command, click.Group):  # a lazy group's commands are not in .commands
            found = ((n, command.get_command(ctx, n)) for n in command.list_commands(ctx))
            todo.extend(([*path, n], sub) for n, sub in found if sub is not None)


TEXT = [
    pytest.param(path, param, command, id=" ".join([*path, param.opts[0]]))
    for path, param, command in _params()
    if isinstance(param.type, click.types.StringParamType | click.Path | WritableFolder)
]


def test_the_sweep_finds_the_options_it_guards() -> None:
    names = {p.id for p in TEXT}
    assert {"infer --quant", "build --today", "gpus --vendor", "oi simulate --db"} <= names
    assert {"build --plot-dir", "validate inference --plot-dir"} <= names  # WritableFolder
    assert len(TEXT) > 100


@pytest.mark.parametrize(("path", "param", "command"), TEXT)
@pytest.mark.parametrize("blank", ["", "  "])
def test_a_blank_value_is_bad_input_naming_the_parameter(
    path: list[str], param: click.Parameter, command: click.Command, blank: str
) -> None:
    assert isinstance(param.type, NotBlank)
    given = [param.opts[0], blank] if isinstance(param, click.Option) else [blank]
    as_json = any(p.name == "as_json" for p in command.params)
    result = CliRunner().invoke(cli, [*path, *given, *(["--json"] if as_json else [])])
    assert result.exit_code == 2, result.output
    error = json.loads(result.stdout)["error"] if as_json else result.stderr
    named = f"'{param.opts[0]}'" if isinstance(param, click.Option) else param.name.upper()
    assert named in error
    assert f"{blank!r} is empty: give" in error


def test_the_message_says_what_to_give_and_the_default_stays(capsys) -> None:
    code = main(["infer", "llama-3.1-8b", "--on", "rtx-4090", "--quant", ""])
    err = capsys.readouterr().err
    assert code == 2
    assert "'--quant': '' is empty: give a value (Weights: Q4_K_M" in err
    assert "or leave --quant out." in err


def test_a_default_of_empty_text_is_the_commands_own_none() -> None:
    """grid join --storage defaults to '' (no storage role): not a value the user typed."""
    _, storage, join = next(
        (path, p, c) for path, p, c in _params() if path == ["grid", "join"] and p.name == "storage"
    )
    assert storage.default == ""
    ctx = click.Context(join)
    ctx.set_parameter_source("storage", click.core.ParameterSource.DEFAULT)
    assert storage.type.convert("", storage, ctx) == ""
    ctx.set_parameter_source("storage", click.core.ParameterSource.COMMANDLINE)
    with pytest.raises(click.BadParameter, match="is empty"):
        storage.type.convert("", storage, ctx)


def test_a_blank_plot_dir_makes_no_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``validate inference --plot-dir ' '`` made a folder named ' ' and wrote the plots there."""
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["validate", "inference", "--plot-dir", " "])
    assert result.exit_code == 2, result.output
    assert "' ' is empty: give" in result.stderr
    assert list(tmp_path.iterdir()) == []
