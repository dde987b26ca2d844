"""``rigwise.bench.imports.parse``: a malformed count or rate is bad input naming where it is."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rigwise.bench.imports import import_file, parse
from rigwise.errors import InputError


@pytest.mark.parametrize(
    ("row", "says"),
    [
        # before: ValueError (exit 70, "internal error at imports.py")
        ({"n_prompt": 512, "n_gen": 0, "avg_ts": "fast"}, "avg_ts = 'fast' is not a finite"),
        # before: 1e400 read as inf and kept as a rate of inf tok/s
        ({"n_prompt": 512, "n_gen": 0, "avg_ts": 1e400}, "avg_ts = 'inf' is not a finite"),
        # before: a negative prompt became a decode-less 'prefill at -5 tokens' or was skipped
        ({"n_prompt": -5, "n_gen": 0, "avg_ts": 100.0}, "n_prompt = '-5' is not a whole"),
        ({"n_prompt": 0, "n_gen": 1.5, "avg_ts": 100.0}, "n_gen = '1.5' is not a whole"),
    ],
)
def test_a_bad_llama_bench_value_names_its_test_and_field(
    row: dict[str, object], says: str
) -> None:
    good = {"n_prompt": 0, "n_gen": 128, "avg_ts": 130.0}
    text = json.dumps([good, row]).replace("Infinity", "1e400")
    with pytest.raises(InputError, match=re.escape(f"llama-bench test 2: {says}")) as caught:
        parse(text)
    assert caught.value.hint is not None and "unedited" in caught.value.hint


def test_a_bad_ollama_rate_names_the_line() -> None:
    with pytest.raises(InputError, match=re.escape("Ollama prompt eval rate = '1.2.3'")):
        parse("prompt eval rate: 1.2.3 tokens/s\neval rate: 66.22 tokens/s\n")


def test_good_rows_still_read() -> None:
    rows = [{"n_prompt": 512, "n_gen": 0, "avg_ts": 7904.0}, {"n_prompt": 0, "n_gen": "128",
            "avg_ts": "133.5"}, {"n_prompt": 512, "n_gen": 128, "avg_ts": 90.0}]  # fmt: skip
    kind, rates = parse(json.dumps(rows))
    assert kind == "llama-bench json"
    assert [(r.phase, r.tokens, r.tokens_per_s) for r in rates] == [
        ("prefill", 512, 7904.0),
        ("decode", 128, 133.5),
    ]  # the pp+tg test has no single phase: skipped as before


@pytest.mark.parametrize(
    ("line", "says"),
    [
        # before: the pattern took the digits before 'e': 1e400 tok/s was read as 1.0 tok/s
        ("eval rate: 1e400 tokens/s", "Ollama eval rate = '1e400' is not a finite"),
        # before: '-3' and 'nan' did not match at all: 'Not a llama-bench ... file'
        ("eval rate: -3 tokens/s", "Ollama eval rate = '-3' is not a finite"),
        ("eval rate: nan tokens/s", "Ollama eval rate = 'nan' is not a finite"),
        # before: 26.5 prompt tokens became 26
        (
            "prompt eval count: 26.5 token(s)\nprompt eval rate: 200 tokens/s",
            "= '26.5' is not a whole",
        ),
    ],
)
def test_an_ollama_number_is_read_whole_or_refused(line: str, says: str) -> None:
    with pytest.raises(InputError, match=re.escape(says)):
        parse(line + "\n")


def test_a_deeply_nested_llama_bench_file_is_bad_input() -> None:
    # before: RecursionError in json.loads, exit 70
    with pytest.raises(InputError, match="nests deeper than 64 levels"):
        parse("[" * 100_000 + "]" * 100_000)


def test_a_file_that_is_not_text_is_named(tmp_path: Path) -> None:
    # before: bytes decoded with replacement characters, then 'Not a llama-bench JSON/CSV file'
    path = tmp_path / "bench.json"
    path.write_bytes(b'[{"gpu_info": "\xff"}]')
    with pytest.raises(InputError, match="is not UTF-8 text"):
        import_file(path, on="rtx-4090", model="llama-3.1-8b", quant=None, save=False)


@pytest.mark.parametrize("avg_ts", ["1_000", "nan", "inf"])
def test_a_llama_bench_csv_rate_is_a_plain_number(avg_ts: str) -> None:
    """Before: '1_000' read as 1000 tok/s (Python's float() takes underscores), 'nan' and
    'inf' refused only by the finite check; now every non-plain spelling is named."""
    text = f"n_prompt,n_gen,avg_ts\n0,128,130.0\n0,128,{avg_ts}\n"
    with pytest.raises(InputError, match=re.escape(f"llama-bench test 2: avg_ts = '{avg_ts}'")):
        parse(text)
    assert parse("n_prompt,n_gen,avg_ts\n0,128,1.305e2\n")[1][0].tokens_per_s == 130.5


@pytest.mark.parametrize(
    ("text", "says"),
    [
        # before: stored nothing for decode with a 300-digit rate in the reason, exit 0
        ("eval rate: 1e300 tokens/s", "Ollama eval rate = '1e300' is over 1,000,000,000 tokens/s"),
        # before: the prefill was refused with the planner's 'Bad option: key 'gen' ...
        # See `rigwise infer --help`', exit 0
        ("n_prompt,n_gen,avg_ts\n0,99999999999,50", "n_gen = '99999999999' is over 10,000,000"),
        (
            "prompt eval count: 0 token(s)\nprompt eval rate: 211 tokens/s",
            "Ollama prompt eval count = '0' under a prompt rate",
        ),
    ],
)
def test_a_count_or_rate_past_any_run_is_bad_input(text: str, says: str) -> None:
    with pytest.raises(InputError, match=re.escape(says)):
        parse(text + "\n")
