"""The hardware tables read from the disk cache equal the ones built from the data files,
and commands print the same bytes either way."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from rigwise.api import _lookup
from rigwise.cli import cli
from rigwise.hardware import catalog

TABLES = (catalog.accelerator_catalog, catalog.link_catalog, catalog.system_catalog)


def _clear() -> None:
    for table in TABLES:
        table.cache_clear()
    _lookup.cached_cluster.cache_clear()
    _lookup.cached_model.cache_clear()


@pytest.fixture
def fresh() -> Iterator[None]:
    _clear()
    yield
    _clear()


def _tables() -> tuple[object, ...]:
    _clear()
    return tuple(table() for table in TABLES)


def test_cached_tables_equal_the_tables_built_from_the_files(
    fresh: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RIGWISE_NO_CACHE", "1")
    slow = _tables()
    monkeypatch.delenv("RIGWISE_NO_CACHE")
    monkeypatch.setenv("RIGWISE_CACHE_DIR", str(tmp_path))
    written = _tables()
    assert len(list(tmp_path.glob("*.pickle"))) == 3
    read = _tables()
    assert read == slow and written == slow
    assert read[0] is not slow[0]  # really read back, not the same object


COMMANDS = (
    ("infer", "llama-3.1-8b", "--on", "rtx-4090", "--json"),
    ("infer", "llama-3.1-70b", "--on", "2x rtx-3090+nvlink", "--json", "--engine", "vllm"),
    ("infer", "qwen2.5-7b", "--on", "dgx-h100", "--concurrency", "32", "--json"),
    ("train", "llama-3.1-8b", "--on", "8x h100-sxm", "--json"),
    ("fit", "--on", "rtx-4090", "--json"),
    ("gpus", "--json"),
    ("infer", "llama-3.1-8b", "--on", "m3 max"),
)


# The layout search and fit report their own run time; all else must match byte for byte.
TIMED = (
    re.compile(r'("search": \{[^{}]*(?:\{[^{}]*\}[^{}]*)*"seconds": )[0-9.e+-]+'),
    re.compile(r'("layouts_per_s": )[0-9.e+-]+'),
    re.compile(r'(\n  "seconds": )[0-9.e+-]+(?=\n\}\n$)'),
)


def _timeless(text: str) -> str:
    for pattern in TIMED:
        text = pattern.sub(r"\g<1>0", text)
    return text


def _outputs() -> list[tuple[int, str]]:
    results = []
    for args in COMMANDS:
        _clear()
        result = CliRunner().invoke(cli, list(args))
        results.append((result.exit_code, _timeless(result.output)))
    return results


def test_commands_print_the_same_bytes_with_and_without_the_cache(
    fresh: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RIGWISE_NO_CACHE", "1")
    slow = _outputs()
    monkeypatch.delenv("RIGWISE_NO_CACHE")
    monkeypatch.setenv("RIGWISE_CACHE_DIR", str(tmp_path))
    _outputs()  # fills the cache
    assert _outputs() == slow
    assert all(code in (0, 1) for code, _ in slow)
