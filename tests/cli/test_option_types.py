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
from rigwise.cli.option_types import FiniteNumber, NotBlank, WritableFolder


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


NUMBERS = [
    pytest.param(path, param, command, id=" ".join([*path, param.opts[0]]))
    for path, param, command in _params()
    if isinstance(param.type, click.types.IntParamType | click.types.FloatParamType | FiniteNumber)
]


def test_the_number_sweep_finds_plain_and_ranged_options() -> None:
    names = {p.id for p in NUMBERS}
    assert {"infer --nodes", "infer --power-limit", "grid up --port", "build --budget"} <= names
    assert len(NUMBERS) > 40


@pytest.mark.parametrize(("path", "param", "command"), NUMBERS)
@pytest.mark.parametrize(
    ("typed", "says"),
    [
        ("1_0", "'1_0' is not a"),  # Python's int() and float() read both as 10
        ("\u0661\u0660", "is not a"),
        ("  ", "'  ' is empty: give a value"),  # was "'' is not an integer"
        ("nan", "'nan' is not a"),  # ranged floats: was refused later, naming the key
    ],
)
def test_a_number_not_written_plainly_is_bad_input_naming_the_option(
    path: list[str], param: click.Parameter, command: click.Command, typed: str, says: str
) -> None:
    as_json = any(p.name == "as_json" for p in command.params)
    given = [param.opts[0], typed] if isinstance(param, click.Option) else [typed]
    result = CliRunner().invoke(cli, [*path, *given, *(["--json"] if as_json else [])])
    assert result.exit_code == 2, result.output
    error = json.loads(result.stdout)["error"] if as_json else result.stderr
    assert f"Invalid value for '{param.opts[0]}'" in error and says in error
    assert "write digits" in error or typed in ("  ", "nan")


INTEGERS = [
    p
    for p in NUMBERS
    if isinstance(p.values[1].type, click.types.IntParamType)
    or (isinstance(p.values[1].type, FiniteNumber) and p.values[1].type.integer)
]


@pytest.mark.parametrize(("path", "param", "command"), INTEGERS)
@pytest.mark.parametrize("typed", ["1e3", "1.5"])
def test_an_integer_option_says_to_write_digits(
    path: list[str], param: click.Parameter, command: click.Command, typed: str
) -> None:
    """'--nodes 1e3' said only "'1e3' is not an integer"; count options such as --prompt read
    1e3 (a token count, like 8k), integer ones take digits and now say so."""
    given = [param.opts[0], typed] if isinstance(param, click.Option) else [typed]
    result = CliRunner().invoke(cli, [*path, *given])
    assert result.exit_code == 2, result.output
    assert f"{typed!r} is not an integer: write digits, e.g. 1000." in result.stderr


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


def test_the_help_in_the_message_keeps_its_ellipsis_and_is_cut_at_a_word(capsys) -> None:
    """--network's help ends in '...' (was shown as 'thunderbolt-4, )'); --fields' help is
    longer than the message takes (was cut mid-word: 'keyed by th')."""
    assert main(["infer", "llama-3.1-8b", "--on", "rtx-4090", "--network", " "]) == 2
    assert "(Link between nodes: 10gbe, ib-ndr, thunderbolt-4, ...), or" in capsys.readouterr().err
    assert main(["infer", "llama-3.1-8b", "--on", "rtx-4090", "--fields", ""]) == 2
    given = capsys.readouterr().err.split("give a value (", 1)[1].split("), or leave", 1)[0]
    assert given.endswith("...") and len(given) <= 120
    words = given.removesuffix("...").split()
    infer = cli.get_command(click.Context(cli), "infer")
    assert infer is not None
    help_words = " ".join(p.help or "" for p in infer.params if p.name == "fields")
    assert words == help_words.split()[: len(words)]  # whole words of the help, in order
