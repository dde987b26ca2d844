"""The kept code of dataclass methods makes the same classes as compiling them does."""

from __future__ import annotations

import dataclasses
import inspect
import os
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from rigwise import dataclass_code

SOURCE = '''
from __future__ import annotations
from dataclasses import dataclass, field

@dataclass(frozen=True)
class Part:
    """A frozen class with a default, a factory and a keyword-only field."""
    name: str
    watts: float = 5.0
    tags: tuple[str, ...] = field(default_factory=tuple)
    note: str = field(default="", kw_only=True)
'''


def _make(module_name: str) -> type:
    """``Part`` defined in a fresh module of that name (dataclasses reads its namespace)."""
    module = types.ModuleType(module_name)
    sys.modules[module_name] = module
    try:
        exec(compile(SOURCE, module_name, "exec"), module.__dict__)
    finally:
        del sys.modules[module_name]
    made: type = module.Part
    return made


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[dataclass_code.CodeCache]:
    """A cache in its own folder, put in place of the process's one for the test."""
    own = dataclass_code.CodeCache(str(tmp_path))
    before = dataclass_code._CACHE
    dataclass_code._CACHE = own
    try:
        yield own
    finally:
        dataclass_code._CACHE = before


def _describe(cls: type) -> tuple[object, ...]:
    one, same, other = cls("a", 1.0, note="x"), cls("a", 1.0, note="x"), cls("b")
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.name = "c"
    with pytest.raises(dataclasses.FrozenInstanceError):
        del one.name
    return (
        repr(one),
        one == same,
        one == other,
        hash(one) == hash(same),
        str(inspect.signature(cls)),
        cls.__init__.__annotations__,  # type: ignore[misc]
        cls.__init__.__code__.co_filename,  # type: ignore[misc]
        [(f.name, f.type, f.kw_only) for f in dataclasses.fields(cls)],
    )


def test_a_class_from_kept_code_is_the_class_compiling_makes(
    cache: dataclass_code.CodeCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as without:
        without.delattr(dataclasses, "exec")  # the built-in exec, as if never installed
        plain = _make("rigwise.probe_of_test")
    passed_on = _make("not_rigwise_probe")  # the stand-in's other path: compiled, not kept
    assert not cache.used
    compiled = _make("rigwise.probe_of_test")  # first run: compiled, kept
    assert cache.changed == {"rigwise.probe_of_test"}
    cache.write()
    assert not cache.changed

    reader = dataclass_code.CodeCache(cache.folder)
    dataclass_code._CACHE = reader
    from_disk = _make("rigwise.probe_of_test")  # second run: every text read from the file
    assert not reader.changed and len(reader.used["rigwise.probe_of_test"]) >= 5
    # The annotations are the fields' types (no `from __future__` flag passed on: '_type_watts').
    assert from_disk.__init__.__annotations__["watts"] == "float"  # type: ignore[misc]
    described = _describe(plain)
    assert _describe(passed_on) == described
    assert _describe(compiled) == described
    assert _describe(from_disk) == described


def test_a_file_others_may_write_is_not_loaded(cache: dataclass_code.CodeCache) -> None:
    _make("rigwise.probe_of_test")
    cache.write()
    path = cache.path("rigwise.probe_of_test")
    os.chmod(path, 0o666)
    reader = dataclass_code.CodeCache(cache.folder)
    dataclass_code._CACHE = reader
    _make("rigwise.probe_of_test")
    assert reader.changed == {"rigwise.probe_of_test"}  # compiled again, not loaded


def test_a_corrupt_file_means_compiling(cache: dataclass_code.CodeCache) -> None:
    _make("rigwise.probe_of_test")
    cache.write()
    Path(cache.path("rigwise.probe_of_test")).write_bytes(b"\x00not marshal")
    reader = dataclass_code.CodeCache(cache.folder)
    dataclass_code._CACHE = reader
    assert (
        _describe(_make("rigwise.probe_of_test"))[0]
        == "Part(name='a', watts=1.0, tags=(), note='x')"
    )
    assert reader.changed == {"rigwise.probe_of_test"}


def test_a_file_of_other_values_means_compiling(cache: dataclass_code.CodeCache) -> None:
    # A well-formed marshal table whose values are not code would make exec raise at import.
    import marshal

    _make("rigwise.probe_of_test")
    cache.write()
    path = Path(cache.path("rigwise.probe_of_test"))
    table = marshal.loads(path.read_bytes())
    path.write_bytes(marshal.dumps({text: 1 for text in table}))
    reader = dataclass_code.CodeCache(cache.folder)
    dataclass_code._CACHE = reader
    assert _describe(_make("rigwise.probe_of_test")) == _describe(_make("not_rigwise_probe"))
    assert reader.changed == {"rigwise.probe_of_test"}


def test_a_removed_cache_folder_is_not_made_again(tmp_path: Path) -> None:
    gone = tmp_path / "removed"
    own = dataclass_code.CodeCache(str(gone))
    own.code("rigwise.probe_of_test", "x = 1")
    own.write()
    assert not gone.exists()


def test_no_cache_turns_it_off(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RIGWISE_CACHE_DIR", str(tmp_path))
    assert dataclass_code.cache_folder_name() == str(tmp_path)
    monkeypatch.setenv("RIGWISE_NO_CACHE", "1")
    assert dataclass_code.cache_folder_name() is None
    off = dataclass_code.CodeCache(None)
    off.code("rigwise.probe_of_test", "x = 1")
    off.write()
    assert list(tmp_path.iterdir()) == []


def test_a_rewritten_file_holds_only_the_texts_of_its_last_run(tmp_path: Path) -> None:
    first = dataclass_code.CodeCache(str(tmp_path))
    first.code("rigwise.probe_of_test", "x = 1")
    first.write()
    second = dataclass_code.CodeCache(str(tmp_path))
    second.code("rigwise.probe_of_test", "x = 2")  # the class changed: its old text goes
    second.write()
    third = dataclass_code.CodeCache(str(tmp_path))
    assert set(third._read("rigwise.probe_of_test")) == {"x = 2"}
