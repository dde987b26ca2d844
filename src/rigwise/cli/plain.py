"""A report written without rich where rich would write it plain, byte for byte.

``rigwise infer`` prints a few lines of markup and one table. When stdout is not a terminal
(a pipe, a file, a test) and nothing forces colour, rich writes them as plain text: markup
removed, the table drawn with its default box, lines up to 160 columns (``_common.console``).
``Report`` collects what a command prints and writes that text itself when every line is
simple enough to be sure of it (printable ASCII, known markup tags, no emoji codes, within
the width); importing rich and rendering through it costs ~40 ms of start-up. Anything else (a
terminal, colour forced, a long or non-ASCII line) is printed by rich, as before.
"""

from __future__ import annotations

import builtins
import os
import re
import sys
from typing import Any

WIDTH = 160  # _common.console()'s width when stdout is not a terminal

_TAG = re.compile(r"\[(bold|green|red|yellow|/)\]")
_EMOJI = re.compile(r":\S*?:")  # rich replaces :name: emoji codes
_WORD = re.compile(r" *[^ ]+ *")


class Table:
    """A table of text cells: headers, then rows (rich's ``Table`` with its defaults)."""

    def __init__(self, *headers: str) -> None:
        self.headers = headers
        self.rows: list[tuple[str, ...]] = []

    def add_row(self, *cells: str) -> None:
        self.rows.append(cells)


class Report:
    """What a command prints (markup lines and tables), written by ``show``."""

    def __init__(self) -> None:
        self.items: list[str | Table] = []

    def print(self, item: str | Table) -> None:
        self.items.append(item)

    def show(self) -> None:
        text = plain_text(self.items) if _plain_stdout() else None
        if text is not None:
            sys.stdout.write(text)
            return
        from rigwise.cli._common import console

        out = console()
        for item in self.items:
            out.print(_rich_table(item) if isinstance(item, Table) else item)


def _rich_table(table: Table) -> Any:
    from rich.table import Table as RichTable

    drawn = RichTable(*table.headers)
    for row in table.rows:
        drawn.add_row(*row)
    return drawn


def _plain_stdout() -> bool:
    """Whether rich would write to stdout without colour, at WIDTH, with its own box lines:
    not a terminal, not forced to be one, UTF-8, not Jupyter or a legacy Windows console."""
    env = os.environ
    try:
        terminal = sys.stdout.isatty()
    except ValueError:
        return False
    encoding = (getattr(sys.stdout, "encoding", "utf-8") or "utf-8").lower()
    return not (
        terminal
        or env.get("TTY_COMPATIBLE") == "1"
        or env.get("FORCE_COLOR")
        or not encoding.startswith("utf")
        or sys.platform == "win32"
        or hasattr(builtins, "get_ipython")
        or hasattr(sys.stdout, "rich_proxied_file")
    )


def plain_text(items: list[str | Table]) -> str | None:
    """The items as rich writes them plain, or None where rich may write them otherwise."""
    lines: list[str] = []
    for item in items:
        if isinstance(item, Table):
            drawn = _table_lines(item)
            if drawn is None:
                return None
            lines.extend(drawn)
            continue
        text = _unmarked(item)
        if text is None:
            return None
        lines.extend(_wrapped(text))
    return "".join(line + "\n" for line in lines)


def _simple(text: str) -> bool:
    """Printable ASCII (one column a character; spaces the only whitespace), no emoji code."""
    return text.isascii() and text.isprintable() and _EMOJI.search(text) is None


def _unmarked(markup: str) -> str | None:
    """The text of a markup line with only known, balanced tags, or None."""
    depth = 0
    for tag in _TAG.findall(markup):
        depth += -1 if tag == "/" else 1
        if depth < 0:  # a closing tag with nothing open: rich's error, not ours to hide
            return None
    text = _TAG.sub("", markup)
    if "[" in text or "\\" in markup or not _simple(text):
        return None
    return text


def _wrapped(text: str) -> list[str]:
    """``text`` in lines of at most WIDTH columns, as rich wraps it: a word (with the spaces
    after it) stays on the line when its letters fit; a word longer than a line is cut every
    WIDTH characters; a line is cut at WIDTH (what spaces after a word can pass)."""
    lines: list[str] = []
    line = ""
    for word in _WORD.findall(text) or [text]:
        letters = len(word.rstrip(" "))
        if len(line) + letters <= WIDTH:
            line += word
        elif letters <= WIDTH:
            lines.append(line)
            line = word
        else:
            pieces = [word[start : start + WIDTH] for start in range(0, len(word), WIDTH)]
            lines.extend([line, *pieces[:-1]] if line else pieces[:-1])
            line = pieces[-1]
    lines.append(line)
    return [line[:WIDTH] for line in lines]


def _table_lines(table: Table) -> list[str] | None:
    """rich's default table (heavy head box, one space of padding) of simple cells, or None."""
    if not table.rows or any(len(cells) != len(table.headers) for cells in table.rows):
        return None
    columns = list(zip(table.headers, *table.rows, strict=True))
    cells = [cell for column in columns for cell in column]
    if any("[" in cell or (cell and not _simple(cell)) for cell in cells):
        return None
    widths = [max(len(cell) for cell in column) + 2 for column in columns]
    if sum(widths) + len(widths) + 1 > WIDTH:
        return None

    def row(cells: tuple[str, ...], edge: str) -> str:
        inner = edge.join(
            f" {cell.ljust(width - 2)} " for cell, width in zip(cells, widths, strict=True)
        )
        return edge + inner + edge

    def rule(left: str, fill: str, cross: str, right: str) -> str:
        return left + cross.join(fill * width for width in widths) + right

    return [
        rule("┏", "━", "┳", "┓"),
        row(table.headers, "┃"),
        rule("┡", "━", "╇", "┩"),
        *(row(cells, "│") for cells in table.rows),
        rule("└", "─", "┴", "┘"),
    ]


__all__ = ["WIDTH", "Report", "Table", "plain_text"]
