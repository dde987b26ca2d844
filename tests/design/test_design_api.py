"""``design_builds``: the build options a request is refused for, each naming the option."""

from __future__ import annotations

import pytest

from rigwise.design.api import design_builds
from rigwise.errors import InputError


@pytest.mark.parametrize("field", ["usd_per_kwh", "budget", "years", "target_tps"])
def test_an_infinite_number_is_bad_input(field: str) -> None:
    # before: usd_per_kwh=inf ranked builds with a TCO of inf (null in JSON)
    with pytest.raises(InputError, match=f"key '{field}' = inf: Input should be a finite"):
        design_builds(model="llama-3.1-8b", **{field: float("inf")})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"method": "full"}, "--method applies to --task finetune, not --task infer"),
        ({"task": "train", "target_tps": 5}, "--target-tps applies to --task infer or serve"),
        ({"task": "train", "concurrency": 4}, "--concurrency applies to --task infer or serve"),
        ({"deadline": "3d"}, "--deadline applies to --task finetune or train, not --task infer"),
        ({"task": "serve", "tokens": "2B"}, "--tokens applies to --task finetune or train"),
    ],
)
def test_an_option_of_another_task_is_bad_input(options: dict[str, object], message: str) -> None:
    # before: 'rigwise build llama-3.1-8b --method full' (task infer) ranked every build with
    # no engine or weight format ('arc-b580 (-)'); --deadline on infer, --target-tps on train
    # were dropped without a word
    with pytest.raises(InputError, match=message):
        design_builds(model="llama-3.1-8b", **options)


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("budget", True, "true is not a number"),
        ("top", True, "true is not a number"),
        ("budget", "1_000", "'1_000' is not a plain number"),
    ],
)
def test_a_bool_or_an_unplain_number_is_bad_input(field: str, value: object, says: str) -> None:
    # before: budget=True ranked builds under a $1 budget, top=True listed one, '1_000' was 1000
    with pytest.raises(InputError, match=f"key '{field}' = .*{says}"):
        design_builds(model="llama-3.1-8b", **{field: value})
    assert design_builds(model="llama-3.1-8b", budget="3000", top="2").options  # text still reads
