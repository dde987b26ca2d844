"""``TrainOptions``: count options name the option and say what to write."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from rigwise.api.train import plan_training
from rigwise.api.train_options import TrainOptions
from rigwise.errors import InputError


@pytest.mark.parametrize(
    ("field", "value"), [("seq", "-5"), ("global_batch", "abc"), ("global_batch", "max")]
)
def test_bad_counts_name_the_option(field: str, value: str) -> None:
    # before: "Cannot read count '-5'. Write it like '2T'." without the option's name;
    # global_batch 'max' (only seq has one): "Input should be a valid integer, unable to parse"
    with pytest.raises(ValidationError) as caught:
        TrainOptions.model_validate({"model": "llama-3.1-8b", field: value})
    error = caught.value.errors()[0]
    assert error["loc"] == (field,)
    assert "must be a whole number, e.g. 2048 or 4k" in error["msg"]


def test_counts_with_suffixes_and_max_still_read() -> None:
    options = TrainOptions.model_validate({"model": "x", "seq": "max", "global_batch": "1k"})
    assert (options.seq, options.global_batch) == ("max", 1000)


@pytest.mark.parametrize(
    ("field", "value"),
    [("seq", True), ("micro_batch", True), ("tokens", True), ("nodes", True), ("price", True),
     ("calibration", {"decode_bandwidth_efficiency": True})],
)  # fmt: skip
def test_a_bool_is_not_a_number(field: str, value: object) -> None:
    # before: {"seq": true} planned a 1-token sequence ("cp does not divide the sequence")
    with pytest.raises(ValidationError, match=f"{field}[\\s\\S]*true is not a number"):
        TrainOptions.model_validate({"model": "llama-3.1-8b", field: value})
    assert TrainOptions.model_validate({"model": "llama-3.1-8b", "compile": True}).compile


@pytest.mark.parametrize(
    ("key", "value"),
    [
        # before: an internal error (exit 70, "Python int too large to convert to C long")
        ("micro_batch", 2**63),
        # before: "fits": true, dp x micro-batch overflowing int64 to 0 in the microbatch count
        ("micro_batch", 2**62),
        ("global_batch", 2**26 + 1),
        ("seq", 2**26 + 1),
        ("seq", "100M"),
        ("tp", 2**20 + 1),
        ("vpp", 2**40),
        ("lora_rank", 2**62),
    ],
)
def test_sizes_past_exact_integer_arithmetic_are_bad_input(key: str, value: object) -> None:
    with pytest.raises(InputError, match=key):
        plan_training(model="llama-3.1-8b", on="8x h100-sxm", **{"global_batch": 128, key: value})


def test_the_largest_sizes_allowed_still_plan() -> None:
    plan = plan_training(model="llama-3.1-8b", on="8x h100-sxm", seq=2**26, global_batch=2**26)
    assert not plan.fits  # 67M-token sequences do not fit: an answer, not an error


def test_steps_past_a_float_count_are_bad_input() -> None:
    # before: an internal error (exit 70 in --queries, HTTP 500 in the web API): "int too large
    # to convert to float" turning steps x global batch x seq into a token count
    with pytest.raises(InputError, match="steps"):
        plan_training(model="llama-3.1-8b", on="8x h100-sxm", steps=10**320)
    assert plan_training(model="llama-3.1-8b", on="8x h100-sxm", steps=2**53).fits


@pytest.mark.parametrize(
    ("field", "value", "rule"),
    [
        ("tokens", float("inf"), "finite number"),
        ("price", float("inf"), "finite number"),
        ("price", 1e308, "less than or equal to 1000000"),
        ("epochs", float("inf"), "finite number"),
    ],
)
def test_infinite_amounts_are_bad_input(field: str, value: float, rule: str) -> None:
    # before: tokens=inf (1e999 on a --queries line) planned 'fits' with time_to_train_s inf
    # (null in JSON), price=inf or 1e308 a cost of inf: an answer with the number missing
    with pytest.raises(InputError, match=f"key '{field}' = .*{rule}"):
        plan_training(model="llama-3.1-8b", on="8x h100-sxm", **{"tokens": 1e9, field: value})
