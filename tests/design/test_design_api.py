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
