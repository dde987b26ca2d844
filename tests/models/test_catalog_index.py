"""The model name index kept in the disk cache equals the one built from the model files, and
one model read from its own file equals the same model read with all the others."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rigwise.models import catalog


def _clear() -> None:
    for cached in (catalog._index, catalog.catalog_entry, catalog.catalog_entries):
        cached.cache_clear()
    catalog._catalog_spec.cache_clear()


@pytest.fixture
def fresh() -> Iterator[None]:
    _clear()
    yield
    _clear()


def test_the_cached_index_equals_the_index_built_from_the_files(
    fresh: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RIGWISE_NO_CACHE", "1")
    built = catalog._index()
    monkeypatch.delenv("RIGWISE_NO_CACHE")
    monkeypatch.setenv("RIGWISE_CACHE_DIR", str(tmp_path))
    _clear()
    written = catalog._index()  # a miss: built and written
    assert any(p.name.startswith("model-names-") for p in tmp_path.iterdir())
    _clear()
    monkeypatch.setattr(catalog, "_build_index", lambda: pytest.fail("the cache was not read"))
    read = catalog._index()
    assert built == written == read
    assert read.aliases[catalog.normalize("Llama 3.1 8B")] == "llama-3.1-8b"


def test_one_model_from_its_own_file_equals_it_among_all(fresh: None) -> None:
    entries = catalog.catalog_entries()
    assert len(entries) > 50
    for name, entry in entries.items():
        assert catalog.catalog_entry(name) == entry
    # Every alias and hub repository a file names finds its model.
    for name, entry in entries.items():
        for alias in (name, *entry.aliases, entry.hf_repo):
            if alias:
                found, _ = catalog.resolve_model_name(alias)
                assert found == catalog._build_index().aliases[catalog.normalize(alias)]
