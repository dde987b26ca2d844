"""The one "most specific row wins" lookup over the glob columns of catalog data files.

Several files key a row by globs (``efficiency_training.csv`` ``applies_to``,
``efficiency_inference.csv`` ``engine``/``device_class``/``quant``, ``engine_overheads.csv``):
a cell holds ``;``-separated globs, empty meaning ``*``, matched case-insensitively. Of the
rows whose every keyed column matches, the most specific wins:

1. columns earlier in the key outrank all later ones together (a row naming the engine beats
   one naming only the device class), a column counting when its cell is not just ``*``;
2. then more literal characters in the matching globs (``nvidia-hbm`` beats ``nvidia-*``,
   ``h100*`` beats ``*``);
3. then exact names over globs that match the same characters (``h100`` beats ``h100*``);
4. then the earlier row in the file.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from typing import TypeVar

Row = TypeVar("Row", bound=Mapping[str, str])


def _globs(cell: str) -> list[str]:
    return [p.strip().lower() for p in cell.split(";") if p.strip()] or ["*"]


def glob_match(name: str, glob: str) -> bool:
    """``fnmatchcase``, with a glob that has no wildcard compared as a string and one whose
    only wildcard is ``*`` matched piece by piece: most cells are plain names or ``nvidia-*``
    globs, and compiling each into a regular expression was most of a command's first lookups."""
    if "?" in glob or "[" in glob:
        return fnmatch.fnmatchcase(name, glob)
    if "*" not in glob:
        return name == glob
    first, *middle, last = glob.split("*")
    end = len(name) - len(last)
    if end < len(first) or not (name.startswith(first) and name.endswith(last)):
        return False
    start = len(first)
    for piece in middle:  # each piece at its leftmost place leaves the most room to the next
        found = name.find(piece, start, end)
        if found < 0:
            return False
        start = found + len(piece)
    return True


def _literal(pattern: str) -> int:
    return len(pattern.replace("*", "").replace("?", ""))


def specificity(row: Mapping[str, str], keys: Mapping[str, str]) -> tuple[int, int, int] | None:
    """How specifically ``row`` matches ``keys`` (column -> value, highest priority first):
    (column weights, literal characters, exact names); higher wins. None: no match."""
    weight = literal = exact = 0
    for rank, (column, value) in enumerate(keys.items()):
        globs = _globs(row[column])
        wanted = value.lower()
        matching = [g for g in globs if glob_match(wanted, g)]
        if not matching:
            return None
        if globs != ["*"]:
            weight += 1 << (len(keys) - 1 - rank)
        literal += max(_literal(g) for g in matching)
        exact += wanted in matching
    return weight, literal, exact


def most_specific(rows: Iterable[Row], **keys: str) -> Row | None:
    """The most specific of ``rows`` matching ``keys`` (see the module doc); None if none does."""
    best: Row | None = None
    best_score: tuple[int, int, int] | None = None
    for row in rows:
        score = specificity(row, keys)
        if score is not None and (best_score is None or score > best_score):
            best, best_score = row, score
    return best


def first_glob_row(rows: Iterable[Row], column: str, name: str) -> Row | None:
    """The first of ``rows`` whose ``column`` glob matches ``name`` as it is (per-accelerator
    tables listed most specific first: ``sm_counts.csv``, ``gpu_clocks.csv`` ...); None if none."""
    for row in rows:
        if glob_match(name, row[column]):
            return row
    return None


__all__ = ["first_glob_row", "glob_match", "most_specific", "specificity"]
