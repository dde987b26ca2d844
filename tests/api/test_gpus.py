"""``list_gpus``: bad options are ``InputError`` naming them, never a raw ValidationError."""

from __future__ import annotations

import pytest

from rigwise.api.gpus import list_gpus
from rigwise.errors import InputError, UnknownNameError


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"sort": "bogus"}, "key 'sort' = 'bogus': Input should be 'name'"),  # ValidationError
        ({"max_price": float("nan")}, "key 'max_price' = nan: not a number"),  # ValidationError
        ({"max_price": float("inf")}, "key 'max_price' = inf: Input should be a finite number"),
        ({"max_price": True}, "key 'max_price' = True: Value error, true is not a number"),
    ],
)
def test_bad_options_are_input_errors(options: dict[str, object], says: str) -> None:
    # before: a raw pydantic ValidationError (inf: every device, True: those under $1)
    with pytest.raises(InputError, match=says):
        list_gpus(**options)


def test_an_unknown_vendor_is_named_not_an_empty_list() -> None:
    # before: list_gpus(vendor="nvdia") returned no device, as if it had none
    with pytest.raises(UnknownNameError, match="Did you mean: nvidia"):
        list_gpus(vendor="nvdia")
    assert list_gpus(vendor="NVIDIA").devices
    # ' amd ' (as a form or a script may send it) said "Unknown vendor ' amd '"
    assert list_gpus(vendor=" amd ").devices == list_gpus(vendor="amd").devices
