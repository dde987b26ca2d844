"""The one "most specific row wins" rule (catalog/match.py), pinned on small tables and on the
real files that use it."""

from __future__ import annotations

import pytest

from rigwise.catalog.loader import read_csv
from rigwise.catalog.match import most_specific, specificity
from rigwise.estimate.compute import training_factors
from rigwise.estimate.engine_overheads import best_row

TRAINING = [
    {"applies_to": "*", "value": "any"},
    {"applies_to": "h100*", "value": "h100 family"},
    {"applies_to": "h100-sxm", "value": "h100-sxm exactly"},
    {"applies_to": "h100-sxm*", "value": "h100-sxm family"},
]


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("h100-sxm", "h100-sxm exactly"),  # exact beats a glob with the same literal characters
        ("H100-SXM", "h100-sxm exactly"),  # case-insensitive
        ("h100-sxm-nvl", "h100-sxm family"),  # longer literal prefix beats a shorter one
        ("h100-pcie", "h100 family"),
        ("a100", "any"),  # '*' is the fallback
    ],
)
def test_single_column_most_specific(key: str, expected: str) -> None:
    row = most_specific(TRAINING, applies_to=key)
    assert row is not None and row["value"] == expected


def test_earlier_columns_outrank_later_ones_together() -> None:
    rows = [
        {"engine": "*", "device_class": "nvidia-hbm", "quant": "fp8", "v": "class and quant"},
        {"engine": "vllm;sglang", "device_class": "*", "quant": "*", "v": "engine"},
        {"engine": "vllm", "device_class": "nvidia-*", "quant": "*", "v": "engine and class glob"},
        {"engine": "vllm", "device_class": "nvidia-hbm", "quant": "*", "v": "engine and class"},
    ]
    keys = {"engine": "vllm", "device_class": "nvidia-hbm", "quant": "fp8"}
    found = most_specific(rows, **keys)
    assert found is not None and found["v"] == "engine and class"  # more literal characters
    engine_only, class_and_quant = specificity(rows[1], keys), specificity(rows[0], keys)
    assert engine_only is not None and class_and_quant is not None
    assert engine_only > class_and_quant
    found = most_specific(rows[:2], **{**keys, "engine": "sglang"})
    assert found is not None and found["v"] == "engine"  # engine (4) beats class + quant (2 + 1)


def test_ties_go_to_the_earlier_row_and_no_match_is_none() -> None:
    rows = [{"applies_to": "a*", "v": "first"}, {"applies_to": "a*", "v": "second"}]
    found = most_specific(rows, applies_to="ab")
    assert found is not None and found["v"] == "first"
    assert most_specific(rows, applies_to="b") is None
    assert most_specific([{"applies_to": "", "v": "blank"}], applies_to="b") is not None


def test_the_catalog_lookups_use_it() -> None:
    inference = read_csv("efficiency_inference.csv")
    keys = {"engine": "llama.cpp", "device_class": "nvidia-gddr", "quant": "q4_k_m"}
    assert best_row("efficiency_inference.csv", **keys) is most_specific(inference, **keys)
    training = read_csv("efficiency_training.csv")
    rows = [r for r in training if r["factor"] == "matmul_efficiency_bf16"]
    row = most_specific(rows, applies_to="h100-sxm")
    assert row is not None and row["applies_to"] != "*"
    assert training_factors("h100-sxm").matmul_efficiency_bf16 == float(row["value"])


def test_glob_match_is_fnmatchcase() -> None:
    """Star-only globs are matched without a regular expression: same answers as fnmatch."""
    import fnmatch
    import random

    from rigwise.catalog.match import glob_match

    rng = random.Random(3)
    for _ in range(20_000):
        name = "".join(rng.choices("ab-*", k=rng.randint(0, 7)))
        glob = "".join(rng.choices("ab-**?", k=rng.randint(0, 6)))
        assert glob_match(name, glob) == fnmatch.fnmatchcase(name, glob), (name, glob)


def test_first_glob_row_takes_the_first_row_whose_glob_matches() -> None:
    from rigwise.catalog.match import first_glob_row

    rows = [{"accelerator": "rtx-pro-6000*", "n": "1"}, {"accelerator": "rtx-*", "n": "2"}]
    assert first_glob_row(rows, "accelerator", "rtx-pro-6000-blackwell") == rows[0]
    assert first_glob_row(rows, "accelerator", "rtx-5090") == rows[1]
    assert first_glob_row(rows, "accelerator", "h100-sxm") is None
