"""Read the packaged data files.

Files are read once per process (``functools.cache``) from the package's ``data/`` folder (via
``importlib.resources`` where the package is zipped), so the catalog works from a wheel as well
as from a checkout. Every row
must carry a non-empty ``source``; a malformed file is a ``CatalogError`` naming file and row.
"""

from __future__ import annotations

import csv
import functools
import io
from pathlib import Path
from typing import Any

from rigwise.errors import CatalogError

_PACKAGE = "rigwise.catalog"
# The data folder beside this module (a checkout, or a wheel unpacked into site-packages):
# read directly, which spares every command the start-up cost of importlib.resources (it
# imports tempfile, shutil, zipfile ...). A zipped package falls back to importlib.resources.
_DATA = Path(__file__).resolve().parent / "data"


def packaged(*names: str) -> Any:
    """A packaged data file or folder under ``data/`` (a ``Path``, or a resource of a zipped
    package); no names: the data folder itself."""
    if _DATA.is_dir():
        return _DATA.joinpath(*names)
    from importlib import resources

    return resources.files(_PACKAGE).joinpath("data", *names)


def data_path(name: str) -> Path:
    """Filesystem path of a packaged data file (for error messages and docs)."""
    return Path(str(packaged(name)))


def _read_text(name: str) -> str:
    try:
        text: str = packaged(name).read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise CatalogError(f"Catalog file {name!r} is missing from the package.") from exc
    return text


def parse_commented_csv(text: str) -> tuple[dict[str, str], ...]:
    """The one reader of rigwise's CSV files (catalog, validation, intervals): lines starting
    with ``#`` (after spaces) and blank lines are comments; values are stripped strings."""
    lines = [
        line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")
    ]
    return tuple(
        {key.strip(): (value or "").strip() for key, value in row.items() if key is not None}
        for row in csv.DictReader(io.StringIO("\n".join(lines)))
    )


def read_commented_csv(path: Path) -> tuple[dict[str, str], ...]:
    """``parse_commented_csv`` of a file outside the package (validation folders, user data)."""
    return parse_commented_csv(path.read_text(encoding="utf-8"))


@functools.cache
def read_csv(name: str, *, require_source: bool = True) -> tuple[dict[str, str], ...]:
    """Rows of ``data/<name>`` as dicts of stripped strings; ``#`` lines are comments."""
    rows = parse_commented_csv(_read_text(name))
    if require_source:
        for number, row in enumerate(rows, start=2):
            if not row.get("source"):
                raise CatalogError(f"{name}, data row {number}: the 'source' column is empty.")
    return rows


@functools.cache
def _read_yaml_cached(name: str) -> Any:
    import yaml  # only where a YAML data file is read (a cached catalog needs none)

    try:
        return yaml.safe_load(_read_text(name))
    except yaml.YAMLError as exc:
        raise CatalogError(f"Catalog file {name!r} is not valid YAML: {exc}") from exc


def read_yaml(name: str) -> Any:
    """Parsed ``data/<name>`` (YAML). Callers must not mutate the result."""
    return _read_yaml_cached(name)


def optional_float(value: str, scale: float = 1.0) -> float | None:
    """'' -> None, '312' -> 312 * scale."""
    return float(value) * scale if value not in ("", None) else None


def optional_int(value: str) -> int | None:
    return int(float(value)) if value not in ("", None) else None
