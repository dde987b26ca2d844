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
import os
from typing import TYPE_CHECKING, Any

from rigwise.errors import CatalogError

if TYPE_CHECKING:
    from pathlib import Path

_PACKAGE = "rigwise.catalog"
# The data folder beside this module (a checkout, or a wheel unpacked into site-packages):
# read directly, which spares every command the start-up cost of importlib.resources (it
# imports tempfile, shutil, zipfile ...). A zipped package falls back to importlib.resources.
# A plain str: reading a data file needs no pathlib (with urllib.parse and ipaddress, ~4 % of
# `rigwise infer`'s instructions); ``packaged`` and ``data_path`` make Paths for their callers.
_DATA = os.path.join(os.path.dirname(os.path.realpath(__file__)), "data")


def packaged(*names: str) -> Any:
    """A packaged data file or folder under ``data/`` (a ``Path``, or a resource of a zipped
    package); no names: the data folder itself."""
    if os.path.isdir(_DATA):
        from pathlib import Path

        return Path(_DATA).joinpath(*names)
    from importlib import resources

    return resources.files(_PACKAGE).joinpath("data", *names)


def packaged_file(*names: str) -> Any:
    """What ``packaged`` names, as a ``str`` path where the data folder is a folder (what the
    catalog's disk cache and the readers below take), else the resource of a zipped package."""
    if os.path.isdir(_DATA):
        return os.path.join(_DATA, *names)
    return packaged(*names)


def packaged_names(*names: str) -> list[str]:
    """The names of the entries of a packaged data folder (``data/`` itself: no names)."""
    if os.path.isdir(_DATA):
        return os.listdir(os.path.join(_DATA, *names))
    return [entry.name for entry in packaged(*names).iterdir()]


def packaged_text(*names: str) -> str:
    """The UTF-8 text of a packaged data file (``FileNotFoundError`` when it is missing)."""
    found = packaged_file(*names)
    if isinstance(found, str):
        with open(found, encoding="utf-8") as handle:  # as Path.read_text: universal newlines
            return handle.read()
    text: str = found.read_text(encoding="utf-8")
    return text


def data_path(name: str) -> Path:
    """Filesystem path of a packaged data file (for error messages and docs)."""
    from pathlib import Path

    return Path(str(packaged(name)))


def _read_text(name: str) -> str:
    try:
        return packaged_text(name)
    except FileNotFoundError as exc:
        raise CatalogError(f"Catalog file {name!r} is missing from the package.") from exc


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
