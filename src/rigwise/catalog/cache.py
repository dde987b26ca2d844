"""A disk cache of tables built from the packaged data files, so a command starts fast.

Parsing and validating the hardware catalog (pydantic rows, YAML, the name tables) costs a few
hundred milliseconds; a command that plans one thing should not pay that every time. The built
tables are pickled in the user's cache folder under a key that is the SHA-256 of the bytes of
every file they were built from (the data files *and* the source files of the code that builds
them), plus the Python and rigwise versions. The data files stay the single source of truth: any
change to one of them (or to the builder) is a new key, and the table is built from the files.

Safe fallbacks: an unreadable, corrupt or foreign cache file is ignored; an unwritable cache
folder just means no cache. ``RIGWISE_NO_CACHE=1`` turns the cache off (the slow path, used by
the test that compares both), ``RIGWISE_CACHE_DIR`` moves it. A cache file is only read when it
belongs to the current user and no one else may write it (pickle runs code on load).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from rigwise.dataclass_code import cache_folder_name, trusted, write_atomically

if TYPE_CHECKING:
    from pathlib import Path

T = TypeVar("T")

_FORMAT = 1  # bump when the layout of the cache files changes
KEEP = 8  # entries kept per table: several checkouts or versions side by side do not thrash


def _name_and_bytes(file: Any) -> tuple[str, bytes]:
    """A ``str`` path (``catalog.loader.packaged_file``), a ``Path`` or a package resource."""
    if isinstance(file, str):
        with open(file, "rb") as handle:
            return os.path.basename(file), handle.read()
    return file.name, file.read_bytes()


def content_key(name: str, files: Iterable[Any]) -> str:
    """SHA-256 of the files' bytes (in the given order) with the Python and cache versions;
    each file a ``str`` path, a ``Path`` or a package resource (the same key for each)."""
    digest = hashlib.sha256(f"{name}|{_FORMAT}|{sys.version}".encode())
    for file in files:
        file_name, data = _name_and_bytes(file)
        digest.update(file_name.encode())
        digest.update(b"\0")
        digest.update(data)
        digest.update(b"\0")
    return digest.hexdigest()


def cached_build(name: str, files: Iterable[Any], build: Callable[[], T]) -> T:
    """``build()``, or the pickle of an earlier ``build()`` from the same ``files``' bytes.

    Any failure of the cache itself (missing file, unreadable folder, corrupt pickle, a class
    that moved) falls back to ``build()``; errors of ``build()`` itself propagate unchanged.
    """
    folder = cache_folder_name()
    if folder is None:
        return build()
    try:
        path = os.path.join(folder, f"{name}-{content_key(name, files)}.pickle")
    except OSError:
        return build()
    try:
        if trusted(path):
            with open(path, "rb") as handle:
                value: T = pickle.loads(handle.read())
            return value
    except Exception:  # any broken cache entry means: build it again
        pass
    value = build()
    _store(folder, path, value)
    return value


def _store(folder: str, path: str, value: object) -> None:
    """Prune the table's old entries, then write (``write_atomically``); give up silently where
    the folder is not ours (full disk, unpicklable value: run without a cache)."""
    from pathlib import Path

    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        _prune(Path(folder), os.path.basename(path).rsplit("-", 1)[0])
    except OSError:  # unwritable: run without a cache
        return
    write_atomically(path, lambda out: pickle.dump(value, out, protocol=pickle.HIGHEST_PROTOCOL))


def _prune(folder: Path, name: str) -> None:
    """Remove all but the KEEP - 1 newest entries of ``name`` (a new one is about to be written)."""
    entries = []
    for path in folder.glob(f"{name}-{'?' * 64}.pickle"):
        try:
            entries.append((path.stat().st_mtime, path))
        except OSError:
            continue
    for _, old in sorted(entries, reverse=True)[KEEP - 1 :]:
        old.unlink(missing_ok=True)
