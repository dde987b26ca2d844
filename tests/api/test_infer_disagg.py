"""``--disagg``: each pool lays itself out, so the one-layout options beside it are bad input."""

from __future__ import annotations

import re

import pytest

from rigwise.api.infer import plan_inference
from rigwise.errors import InputError

POOLS = {"prefill": {"tp": 4}, "decode": {"tp": 4}}


@pytest.mark.parametrize(
    ("option", "value", "flag", "key"),
    [
        ("tp", 2, "--tp", "tp"),  # before: ignored (the pools' tp 4 planned)
        ("dp", 2, "--dp", "workers"),  # before: "--dp 2 replicas of tp 8 x pp 1 need 16 devices"
        ("max_batch", 8, "--max-batch", "max_batch"),  # before: not the pools' running batch
    ],
)
def test_a_layout_option_beside_disagg_names_the_pool_key(
    option: str, value: int, flag: str, key: str
) -> None:
    with pytest.raises(
        InputError, match=re.escape(f"{flag} {value} cannot be combined with --disagg")
    ) as caught:
        plan_inference(
            model="llama-3.1-8b", on="8x h100", disagg=POOLS, levers=False, **{option: value}
        )
    assert caught.value.hint is not None and f'"decode": {{"{key}": 2}}' in caught.value.hint


def test_disagg_alone_still_plans() -> None:
    plan = plan_inference(model="llama-3.1-8b", on="8x h100", disagg=POOLS, levers=False)
    assert plan.fits and plan.layout.gpus == 8


def test_a_pool_value_out_of_range_says_the_range() -> None:
    # before: "decode.max_batch=1000001 must be a whole number >= 1" (it was one)
    pools = {"prefill": {"tp": 4}, "decode": {"tp": 4, "max_batch": 1_000_001}}
    with pytest.raises(
        InputError,
        match=re.escape("decode.max_batch=1000001 must be a whole number from 1 to 100,000"),
    ):
        plan_inference(model="llama-3.1-8b", on="8x h100", disagg=pools, levers=False)
