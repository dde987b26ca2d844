"""``search_serving_layouts``: more devices than given is bad input; one device says why no
disaggregated layout is searched."""

from __future__ import annotations

import pytest

from rigwise.api.serving_search import search_serving_layouts
from rigwise.errors import InputError


def test_more_gpus_than_the_cluster_is_bad_input() -> None:
    # before: --gpus 1000 on 8 H100s searched the 8 without a word
    with pytest.raises(InputError, match="--gpus 1000 is more than the 8 devices") as caught:
        search_serving_layouts(model="llama-3.1-8b", on="8x h100", gpus=1000)
    assert caught.value.hint is not None and "--gpus 8 or fewer" in caught.value.hint


def test_one_device_notes_that_disaggregation_needs_two() -> None:
    found = search_serving_layouts(model="llama-3.1-8b", on="h100")
    assert found.best_disaggregated is None and found.best_aggregated is not None
    assert found.notes == (
        "Disaggregated layouts need 2 or more devices (a prefill and a decode worker); 1 given.",
    )
    two = search_serving_layouts(model="llama-3.1-8b", on="8x h100", gpus=2)
    assert two.notes == () and two.best_disaggregated is not None
