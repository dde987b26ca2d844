"""``rigwise.bench.imports.parse``: a malformed count or rate is bad input naming where it is."""

from __future__ import annotations

import json
import re

import pytest

from rigwise.bench.imports import parse
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
