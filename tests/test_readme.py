"""The README's examples are what the commands print: a README that cannot drift.

Every fenced block of README.md is read; a line ``$ rigwise ...`` is a command, and the lines
after it (to the next command or the end of the block) are what it prints. Each such line must
match one printed line: the words exactly, ``...`` standing for anything, and every number
within ``REL_TOL`` of the README's (so a faster laptop or a refitted factor within a few percent
does not fail the build, but a drifted example does). ``compare`` is tested on its own below.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from rigwise.cli import cli

README = Path(__file__).resolve().parents[1] / "README.md"
REL_TOL = 0.03  # 3 %: the README rounds to 3 significant digits; more is a drifted example
_NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")
_FENCE = re.compile(r"^```[a-z]*\s*$")


@dataclass(frozen=True)
class Example:
    command: str
    expected: tuple[str, ...]
    line: int  # README line of the command


def examples(text: str) -> list[Example]:
    """The ``$ rigwise ...`` commands of the fenced blocks and the lines each prints."""
    found: list[Example] = []
    inside = False
    command: str | None = None
    expected: list[str] = []
    start = 0

    def close() -> None:
        if command is not None:
            found.append(Example(command, tuple(expected), start))

    for number, line in enumerate(text.splitlines(), start=1):
        if _FENCE.match(line):
            if inside:
                close()
                command, expected = None, []
            inside = not inside
            continue
        if not inside:
            continue
        if line.startswith("$ rigwise "):
            close()
            command, expected, start = line[2:], [], number
        elif command is not None and line.strip() and line.strip() != "...":
            expected.append(line)
    return found


def _pattern(expected: str) -> tuple[re.Pattern[str], list[float]]:
    """A regex for the printed line (numbers captured, '...' anything) and the numbers."""
    parts: list[str] = []
    numbers: list[float] = []
    for index, chunk in enumerate(re.split(r"(\.\.\.)", " ".join(expected.split()))):
        if index % 2:
            parts.append(".*?")
            continue
        position = 0
        for match in _NUMBER.finditer(chunk):
            parts.append(re.escape(chunk[position : match.start()]))
            parts.append(r"(\d+(?:,\d{3})*(?:\.\d+)?)")
            numbers.append(float(match.group().replace(",", "")))
            position = match.end()
        parts.append(re.escape(chunk[position:]))
    return re.compile("".join(parts)), numbers


def _close(expected: float, printed: float) -> bool:
    return abs(printed - expected) <= REL_TOL * max(abs(expected), 1e-12)


def compare(expected: tuple[str, ...], printed: str) -> list[str]:
    """What differs: an expected line the output does not contain in words, or whose numbers
    are off by more than ``REL_TOL`` (empty: the example holds). Runs of spaces and the line
    breaks a terminal wraps long lines at count as one space."""
    text = " ".join(printed.split())
    problems: list[str] = []
    for want in expected:
        pattern, numbers = _pattern(want)
        candidates = list(pattern.finditer(text))
        if not candidates:
            problems.append(f"the output has nothing like: {want.strip()}")
            continue
        best = min(
            candidates,
            key=lambda m: sum(
                abs(float(g.replace(",", "")) - n) / max(abs(n), 1e-12)
                for g, n in zip(m.groups(), numbers, strict=True)
            ),
        )
        off = [
            f"{n:g} -> {g}"
            for g, n in zip(best.groups(), numbers, strict=True)
            if not _close(n, float(g.replace(",", "")))
        ]
        if off:
            problems.append(f"{want.strip()}: numbers moved ({', '.join(off)})")
    return problems


EXAMPLES = examples(README.read_text(encoding="utf-8"))


def test_the_readme_has_examples() -> None:
    assert len(EXAMPLES) >= 5
    assert all(example.expected for example in EXAMPLES)


@pytest.mark.parametrize(
    "example", EXAMPLES, ids=[f"README.md:{e.line} {e.command}" for e in EXAMPLES]
)
def test_readme_example_prints_what_the_readme_says(example: Example) -> None:
    args = shlex.split(example.command)[1:]
    result = CliRunner().invoke(cli, args, env={"COLUMNS": "100"})
    assert result.exit_code in (0, 1), result.output
    problems = compare(example.expected, result.output)
    assert problems == [], f"README.md line {example.line}: {example.command}\n" + "\n".join(
        problems
    )


def test_compare_accepts_rounding_and_wildcards_and_fails_on_drift() -> None:
    printed = "decode  16.41 tok/s (memory bandwidth)\nrejected 375 candidates (236 estimated)"
    assert compare(("decode  16.4 tok/s (memory bandwidth)",), printed) == []
    assert compare(("rejected 375 candidates (...)",), printed) == []
    drifted = compare(("rejected 425 candidates (...)",), printed)
    assert drifted and "425 -> 375" in drifted[0]
    assert compare(("decode  17.0 tok/s (memory bandwidth)",), printed)  # 3.6 % off: drift
    assert compare(("decode  16.4 tok/s (compute)",), printed)  # other words: drift
    wrapped = "lever: a second machine: still does not fit (needs 123.5\nGB of 103.1 GB usable)"
    want = "lever: a second machine: ... (needs 123.5 GB of 103.1 GB ...)"
    assert compare((want,), wrapped) == []


def test_examples_are_read_from_fenced_blocks_only() -> None:
    text = "$ rigwise gpus\n```\n$ rigwise gpu p40\nP40 24 GB\n...\n$ rigwise gpu t4\nT4\n```\n"
    found = examples(text)
    assert [(e.command, e.expected) for e in found] == [
        ("rigwise gpu p40", ("P40 24 GB",)),
        ("rigwise gpu t4", ("T4",)),
    ]
