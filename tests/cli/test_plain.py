"""cli/plain writes what rich writes to a pipe, byte for byte, or leaves the writing to rich."""

from __future__ import annotations

import io
import random
import string

import pytest
from rich.console import Console

from rigwise.cli import plain
from rigwise.cli.plain import WIDTH, Table, plain_text


def _rich(items: list[str | Table]) -> str:
    """What rich writes for the items to a pipe (cli/_common.console's settings)."""
    buffer = io.StringIO()
    out = Console(highlight=False, soft_wrap=False, width=WIDTH, file=buffer)
    for item in items:
        out.print(plain._rich_table(item) if isinstance(item, Table) else item)
    return buffer.getvalue()


def _line(rng: random.Random) -> str:
    """Words of every length (longer than a line too) and runs of spaces, some in markup."""
    words = []
    while sum(map(len, words)) < rng.choice((40, 150, 160, 170, 330, 700)):
        length = rng.choice((1, 4, 9, 30, 159, 160, 161, 400))
        word = "".join(rng.choice(string.ascii_letters + ".,-()%/") for _ in range(length))
        words.append(word + " " * rng.choice((0, 1, 1, 2, 7, 200)))
    text = " " * rng.choice((0, 0, 2, 170)) + "".join(words)
    return f"[bold]{text}[/] ok" if rng.random() < 0.2 else text


def test_lines_of_any_length_wrap_as_rich_wraps_them() -> None:
    rng = random.Random(12)
    lines = [_line(rng) for _ in range(1500)]
    lines += ["", " ", "x" * WIDTH, "x" * (WIDTH + 1), "a " * WIDTH, "[green]fits[/]: yes"]
    for line in lines:
        assert plain_text([line]) == _rich([line]), line


def test_tables_are_drawn_as_rich_draws_them() -> None:
    rng = random.Random(7)
    for _ in range(300):
        columns = rng.randint(1, 7)
        table = Table(*(f"h{i}" * rng.randint(1, 4) for i in range(columns)))
        for _ in range(rng.randint(1, 4)):
            table.add_row(*("".join(rng.choices("ab. 1/:", k=rng.randint(0, 30))).strip()
                            for _ in range(columns)))  # fmt: skip
        items: list[str | Table] = [table, "after"]
        text = plain_text(items)
        assert text is None or text == _rich(items)


@pytest.mark.parametrize(
    "markup",
    ["a [link]b[/]", "[/] closes nothing", "emoji :smile: code", "tab\there", "caf\u00e9", "a\\[b"],
)
def test_what_rich_may_write_otherwise_is_left_to_rich(markup: str) -> None:
    assert plain_text([markup]) is None
    assert plain_text([Table("a"), markup]) is None


def test_wide_or_unusual_tables_are_left_to_rich() -> None:
    wide = Table("a", "b")
    wide.add_row("x" * 100, "y" * 100)
    empty = Table("a")
    bracket = Table("a")
    bracket.add_row("[b]")
    assert [plain_text([t]) for t in (wide, empty, bracket)] == [None, None, None]


@pytest.mark.parametrize(
    "options",
    [
        {"model": "llama-3.1-8b", "on": "rtx-4090"},
        {"model": "llama-3.1-8b", "on": "rtx-4090", "concurrency": 16, "latency_budget": "50ms"},
        {"model": "llama-3.1-70b", "on": "2x rtx-3090", "concurrency": 8, "power_limit": 250.0},
        {"model": "llama-3.1-8b", "on": "gb200-nvl72", "engine": "vllm"},
    ],
)
def test_infer_reports_are_plain_and_as_rich_writes_them(
    options: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    from rigwise.api.infer import plan_inference
    from rigwise.cli import infer

    shown: list[list[str | Table]] = []
    monkeypatch.setattr(plain.Report, "show", lambda self: shown.append(self.items))
    infer.render(plan_inference(**options))
    text = plain_text(shown[0])
    assert text is not None and text == _rich(shown[0])
