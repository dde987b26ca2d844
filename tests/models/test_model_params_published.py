"""Golden test: every catalog model's parameter count against its published figure.

Parametrised over the catalog files. ``exact`` figures (safetensors metadata totals on the
hub) must match to the parameter; rounded figures (papers, model cards) within the stated
tolerance, which is at most half a unit of the published figure's last digit unless the data
file says otherwise.
"""

from __future__ import annotations

from typing import Any

import pytest

from rigwise.models import load_model
from rigwise.models.catalog import catalog_entries

ENTRIES = catalog_entries()
EXACT = [name for name, e in ENTRIES.items() if e.params_published.get("exact")]


def _tolerance(published: dict[str, Any], value: float, prefix: str = "") -> float:
    if f"{prefix}tolerance_abs" in published:
        return float(published[f"{prefix}tolerance_abs"])
    return float(published[f"{prefix}tolerance_rel"]) * value


def _published_view(name: str) -> int:
    """Our count in the terms the published figure uses."""
    spec = load_model(name)
    published = ENTRIES[name].params_published
    total = spec.params_total
    if published.get("includes_vision"):
        total += spec.params_vision
    if published.get("stored_tied_head"):
        total += spec.vocab_size * spec.hidden_size  # the checkpoint stores lm_head separately
    return total


def test_at_least_fifteen_models_are_checked_to_the_parameter() -> None:
    assert len(EXACT) >= 15


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_total_matches_published(name: str) -> None:
    published = ENTRIES[name].params_published
    assert published.get("source"), f"{name}: params_published needs a source"
    ours = _published_view(name)
    if published["exact"]:
        assert ours == published["total"]
    else:
        target = float(published["total"])
        assert abs(ours - target) <= _tolerance(published, target)


@pytest.mark.parametrize(
    "name", sorted(n for n, e in ENTRIES.items() if "active" in e.params_published)
)
def test_active_matches_published(name: str) -> None:
    published = ENTRIES[name].params_published
    spec = load_model(name)
    active = spec.params_active
    if published.get("active_excludes_embedding"):
        active -= spec.params_embedding
    if published.get("active_excludes_head"):
        active -= spec.params_lm_head  # GLM-4.5 and MiniMax-M2 count neither end of the model
    target = float(published["active"])
    assert abs(active - target) <= _tolerance(published, target, "active_")


def test_deepseek_v3_mtp_module_is_counted_separately() -> None:
    spec = load_model("deepseek-v3")
    # arXiv:2412.19437: 671B main model; the HF checkpoint (685B) adds the MTP module.
    assert spec.params_total == 671_026_419_200
    assert 13e9 < spec.params_mtp < 15e9
    assert round((spec.params_total + spec.params_mtp) / 1e9) == 684  # 685B incl. FP8 scales


def test_catalog_files_carry_source_and_date() -> None:
    for entry in ENTRIES.values():
        assert entry.source and len(entry.retrieved) == 10
