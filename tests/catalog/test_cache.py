"""The disk cache of built catalog tables: keyed by the files' bytes, safe when broken."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rigwise.catalog import cache
from rigwise.catalog.cache import cached_build
from rigwise.dataclass_code import cache_folder_name


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "cache"
    monkeypatch.setenv("RIGWISE_CACHE_DIR", str(where))
    monkeypatch.delenv("RIGWISE_NO_CACHE", raising=False)
    return where


def _source(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "table.csv"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_second_build_from_the_same_bytes_is_read_from_the_cache(
    folder: Path, tmp_path: Path
) -> None:
    source = _source(tmp_path, "a,b\n1,2\n")
    calls: list[int] = []

    def build() -> dict[str, int]:
        calls.append(1)
        return {"rows": 1}

    assert cached_build("t", [source], build) == {"rows": 1}
    assert cached_build("t", [source], build) == {"rows": 1}
    assert len(calls) == 1
    assert len(list(folder.glob("t-*.pickle"))) == 1


def test_changed_bytes_are_a_new_key_and_old_entries_are_pruned(
    folder: Path, tmp_path: Path
) -> None:
    source = _source(tmp_path, "a,b\n1,2\n")
    assert cached_build("t", [source], lambda: 1) == 1
    source.write_text("a,b\n1,3\n", encoding="utf-8")
    assert cached_build("t", [source], lambda: 2) == 2
    assert cached_build("t", [source], lambda: 3) == 2  # the new bytes' entry
    for version in range(cache.KEEP + 3):
        source.write_text(f"a,b\n1,{version + 10}\n", encoding="utf-8")
        assert cached_build("t", [source], lambda v=version: v) == version
    assert len(list(folder.glob("t-*.pickle"))) == cache.KEEP


def test_a_corrupt_cache_file_is_rebuilt(folder: Path, tmp_path: Path) -> None:
    source = _source(tmp_path, "x\n")
    cached_build("t", [source], lambda: "first")
    (entry,) = folder.glob("t-*.pickle")
    entry.write_bytes(b"not a pickle")
    assert cached_build("t", [source], lambda: "again") == "again"


def test_a_file_others_may_write_is_not_trusted(folder: Path, tmp_path: Path) -> None:
    source = _source(tmp_path, "x\n")
    cached_build("t", [source], lambda: "mine")
    (entry,) = folder.glob("t-*.pickle")
    os.chmod(entry, 0o666)
    assert cached_build("t", [source], lambda: "rebuilt") == "rebuilt"


def test_an_unwritable_cache_folder_means_no_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv("RIGWISE_CACHE_DIR", str(blocker / "cache"))  # a folder under a file
    source = _source(tmp_path, "x\n")
    assert cached_build("t", [source], lambda: 7) == 7
    assert cached_build("t", [source], lambda: 8) == 8


def test_rigwise_no_cache_turns_it_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGWISE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RIGWISE_NO_CACHE", "1")
    assert cache_folder_name() is None
    assert cached_build("t", [_source(tmp_path, "x\n")], lambda: 3) == 3
    assert not (tmp_path / "cache").exists()


def test_errors_of_the_build_itself_propagate(folder: Path, tmp_path: Path) -> None:
    def build() -> None:
        raise ValueError("bad row")

    with pytest.raises(ValueError, match="bad row"):
        cached_build("t", [_source(tmp_path, "x\n")], build)
