"""``pooled_memory_answer``: a wrong name is bad input, not a pool that does not fit."""

from __future__ import annotations

import pytest

from rigwise.design.clusters import pooled_memory_answer
from rigwise.errors import InputError, UnknownNameError

GOOD = dict(model="llama-3.1-8b", on="rtx-4090", nodes=2, network="10gbe")


@pytest.mark.parametrize(
    ("change", "kind"),
    [
        ({"network": "zzz"}, "link"),  # before: "2 of them over zzz: does not fit", exit 0
        ({"on": "zzz"}, "GPU"),  # before: "One zzz: does not fit", exit 1
        ({"model": "zzz"}, "model"),
        ({"reference": "zzz"}, "GPU"),  # before: "For comparison, one zzz: does not fit"
        ({"quant": "zzz"}, "quant format"),
    ],
)
def test_a_wrong_name_is_bad_input_naming_it(change: dict[str, str], kind: str) -> None:
    options = {**GOOD, **change}
    with pytest.raises(UnknownNameError, match=f"Unknown {kind} 'zzz'"):
        pooled_memory_answer(
            options["model"], options["on"], int(options["nodes"]), options["network"],
            reference=options.get("reference"), quant=options.get("quant"),
        )  # fmt: skip


def test_good_names_still_answer() -> None:
    answer = pooled_memory_answer("llama-3.1-8b", "rtx-4090", 2, "10gbe", reference="h100")
    assert answer.single.fits and answer.pooled.fits and answer.reference is not None


def test_a_pool_of_one_node_is_bad_input() -> None:
    # before: 'One rtx-4090: does not fit; 1 of them over None: does not fit. Pooling adds ...'
    with pytest.raises(InputError, match="--nodes 1 is one machine, not a pool"):
        pooled_memory_answer("llama-3.1-70b", "rtx-4090", 1, "10gbe")
