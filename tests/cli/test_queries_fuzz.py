"""Fuzzing --queries files: random lines (objects with wrong types, non-objects, broken JSON,
deep nesting, over-long lines) give one answer per line, errors naming the line, the worst
line's exit code, and never a traceback; bad paths are named errors."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rigwise.cli import cli
from rigwise.cli.queries import MAX_QUERY_LINE_CHARS
from rigwise.serialize import nonsense_numbers

EXAMPLES = int(os.environ.get("RIGWISE_FUZZ_EXAMPLES", "25"))
VALUE = st.sampled_from(
    ["llama-3.1-8b", "rtx-4090", "dgx-h100", "", "1e400", 0, -3, 1.5, 10**30, None, True, [], {}]
)
KEYS = st.sampled_from(["model", "on", "nodes", "context", "prompt", "concurrency", "seq", "bogus"])
OBJECT = st.dictionaries(KEYS, VALUE, max_size=4).map(
    lambda d: json.dumps({"model": "llama-3.1-8b", "on": "rtx-4090", "levers": False, **d})
)
LINE = st.one_of(
    OBJECT,
    st.sampled_from(["", "not json", "[1, 2]", "42", "{", "[" * 100_000, "NaN", '{"a": NaN}']),
    st.text(max_size=50),
)


def run_queries(command: str, path: Path) -> tuple[int, list[dict[str, Any]]]:
    result = CliRunner().invoke(cli, [command, "--queries", str(path)])
    output = result.stdout + result.stderr
    assert "Traceback" not in output and result.exit_code in (0, 1, 2), output[-1500:]
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    for answer in answers:
        if "error" not in answer:
            assert not nonsense_numbers(answer), nonsense_numbers(answer)[:5]
    return int(result.exit_code), answers


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck),
          derandomize=EXAMPLES <= 25)  # fmt: skip
@given(lines=st.lists(LINE, min_size=1, max_size=4), command=st.sampled_from(["infer", "train"]))
def test_random_query_files_answer_line_by_line(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str], command: str
) -> None:
    lines = [line.replace("\n", " ").replace("\r", " ") for line in lines]
    path = tmp_path_factory.mktemp("queries") / "q.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    code, answers = run_queries(command, path)
    assert len(answers) == sum(1 for line in lines if line.strip())
    bad = [a for a in answers if "error" in a]
    assert all(a["error"].startswith("line ") for a in bad)
    assert code == 2 if bad else code in (0, 1)


def test_an_over_long_line_is_an_error_for_that_line_only(tmp_path: Path) -> None:
    good = json.dumps({"model": "llama-3.1-8b", "on": "rtx-4090", "levers": False})
    path = tmp_path / "q.jsonl"
    path.write_text(f"{'x' * (MAX_QUERY_LINE_CHARS + 10)}\n{good}\n", encoding="utf-8")
    code, answers = run_queries("infer", path)
    assert code == 2 and "line 1" in answers[0]["error"] and answers[1]["fits"] is True
    assert answers[0]["error"] == f"line 1 is longer than {MAX_QUERY_LINE_CHARS:,} bytes."
    assert "newline" in answers[0]["hint"]  # was null


@pytest.mark.parametrize("command", ["infer", "train"])
def test_a_key_given_twice_is_an_error_for_that_line(tmp_path: Path, command: str) -> None:
    """'{"model": ..., "on": "rtx-4090", "on": "h100-sxm"}' planned the last 'on' without a
    word (JSON keeps the last value)."""
    twice = '{"model": "llama-3.1-8b", "on": "rtx-4090", "on": "h100-sxm"}'
    good = json.dumps({"model": "llama-3.1-8b", "on": "rtx-4090"})
    path = tmp_path / "q.jsonl"
    path.write_text(f"{twice}\n{good}\n", encoding="utf-8")
    code, answers = run_queries(command, path)
    assert code == 2 and "error" not in answers[1]
    assert answers[0]["error"] == "line 1 gives the key 'on' twice (JSON keeps only the last)."
    assert answers[0]["hint"] == "Keep one value for each key."


@pytest.mark.parametrize("command", ["infer", "train"])
@pytest.mark.parametrize("bad", [b'{"model": "\xff"}', b"\x00"])
def test_a_line_that_is_not_text_is_an_error_for_that_line_only(
    tmp_path: Path, command: str, bad: bytes
) -> None:
    # before: the run stopped at the bad line (exit 2 on stderr): the lines after it unanswered
    good = json.dumps({"model": "llama-3.1-8b", "on": "rtx-4090"}).encode()
    path = tmp_path / "q.jsonl"
    path.write_bytes(good + b"\n" + bad + b"\n" + good + b"\n")
    code, answers = run_queries(command, path)
    assert code == 2 and len(answers) == 3 and "error" not in answers[2]
    assert answers[1]["error"].startswith("line 2: ") and "line 2, " in answers[1]["error"]
    assert "UTF-8" in answers[1]["error"] or "NUL" in answers[1]["error"]


@pytest.mark.parametrize("command", ["infer", "train"])
@pytest.mark.parametrize("where", ["/nonexistent.jsonl", "/", "/dev/zero", "binary"])
def test_bad_query_paths_are_named_errors(tmp_path: Path, command: str, where: str) -> None:
    if where == "binary":
        where = str(tmp_path / "q.jsonl")
        Path(where).write_bytes(b"\xff\xfe\x00\x01" * 100)
    result = CliRunner().invoke(cli, [command, "--queries", where])
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert "queries file" in result.stderr.lower()
