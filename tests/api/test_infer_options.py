"""``InferOptions``: count options name the option and say what to write."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from rigwise.api.infer_options import InferOptions


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("gen", "max", "must be a whole number, e.g. 512 or 8k"),
        ("prompt", "-3", "must be a whole number, e.g. 512 or 8k"),
        ("concurrency", "-3", "whole number between 1 and 1,048,576 (or 'max')"),
        ("concurrency", "1.5", "whole number between 1 and 1,048,576 (or 'max')"),
    ],
)
def test_bad_counts_name_the_option(field: str, value: str, says: str) -> None:
    # before: parse_count's InputError "Cannot read count '-3'. Write it like '2T'." escaped
    # without the option's name, and '1.5' concurrent requests became 1
    with pytest.raises(ValidationError) as caught:
        InferOptions.model_validate({"model": "llama-3.1-8b", field: value})
    error = caught.value.errors()[0]
    assert error["loc"] == (field,)
    assert says in error["msg"]


def test_counts_with_suffixes_still_read() -> None:
    options = InferOptions.model_validate({"model": "x", "prompt": "8k", "concurrency": "1.5k"})
    assert (options.prompt, options.concurrency) == (8000, 1500)


@pytest.mark.parametrize("budget", ["abc", "-1s", "5 parsecs"])
def test_a_latency_budget_is_a_duration_even_when_nothing_fits(budget: str) -> None:
    # before: read only once the model fit, so 'abc' on a plan that does not fit passed unseen
    with pytest.raises(ValidationError) as caught:
        InferOptions.model_validate({"model": "llama-3.1-405b", "latency_budget": budget})
    error = caught.value.errors()[0]
    assert error["loc"] == ("latency_budget",)
    assert "must be a duration, e.g. 200ms" in error["msg"]
    assert InferOptions(model="x", latency_budget="0ms").latency_budget == "0ms"  # all miss it


@pytest.mark.parametrize(
    ("key", "spelled"), [("context", "MAX"), ("prompt", " Max "), ("concurrency", "MAX")]
)
def test_max_is_read_whatever_its_case(key: str, spelled: str) -> None:
    """'--context MAX' said "must be a whole number, e.g. 512 or 8k" (train's --seq MAX reads)."""
    from rigwise.api.infer import plan_inference

    engine = "vllm" if key == "concurrency" else None
    given = plan_inference(model="llama-3.1-8b", on="rtx-4090", engine=engine, **{key: spelled})
    same = plan_inference(model="llama-3.1-8b", on="rtx-4090", engine=engine, **{key: "max"})
    assert given == same
