"""Every test file under tests/ is collected: a folder pytest skips by default (``build``,
``dist``, ``venv``, dot-folders) or a file outside ``testpaths`` would silently never run."""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent


def _whole_suite(config: pytest.Config) -> bool:
    roots = {Path(config.rootpath, arg.split("::")[0]).resolve() for arg in config.args}
    return roots == {TESTS} or roots == {TESTS.parent}


def test_every_test_file_is_collected(request: pytest.FixtureRequest) -> None:
    if not _whole_suite(request.config):
        pytest.skip("checks collection only when the whole tests/ folder is run")
    root = request.config.rootpath
    on_disk = {p.relative_to(root).as_posix() for p in TESTS.rglob("test_*.py")}
    seen = getattr(request.config, "rigwise_seen_test_files", set())
    missing = sorted(on_disk - seen)
    assert not missing, f"test files pytest never collected: {missing}"
    assert "tests/design/test_design_designer.py" in seen
