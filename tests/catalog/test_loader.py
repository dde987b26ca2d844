"""The str-path readers of the packaged data name and read what ``packaged`` does, and planning
one model from the command line needs no pathlib (its import is ~4 % of that command)."""

from __future__ import annotations

import subprocess
import sys

from rigwise.catalog import loader


def test_str_paths_name_and_read_the_packaged_files() -> None:
    names = loader.packaged_names()
    assert sorted(names) == sorted(entry.name for entry in loader.packaged().iterdir())
    assert "accelerators.csv" in names and "models" in names
    models = loader.packaged_names("models")
    assert sorted(models) == sorted(entry.name for entry in loader.packaged("models").iterdir())
    for parts in (("accelerators.csv",), ("models", sorted(models)[0])):
        assert loader.packaged_file(*parts) == str(loader.packaged(*parts))
        assert loader.packaged_text(*parts) == loader.packaged(*parts).read_text(encoding="utf-8")


def test_a_missing_file_is_not_found() -> None:
    try:
        loader.packaged_text("no-such-file.csv")
    except FileNotFoundError:
        return
    raise AssertionError("a missing packaged file was read")


def test_planning_a_catalog_model_imports_no_pathlib() -> None:
    code = (
        "import sys; from rigwise.cli import main; "
        "main(['infer', 'llama-3.1-8b', '--on', 'rtx-4090', '--no-levers']); "
        "print('pathlib' in sys.modules, file=sys.stderr)"
    )
    for _ in range(2):  # the first run may write the disk cache (that may use pathlib)
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "fits" in done.stdout
    assert done.stderr.strip().splitlines()[-1] == "False"
