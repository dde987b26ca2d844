"""Compile the methods that ``@dataclass`` writes for rigwise's classes once, not every run.

``dataclasses`` builds ``__init__``, ``__repr__``, ``__eq__``, ``__hash__`` and a frozen class's
``__setattr__``/``__delattr__`` as source text and compiles each with ``exec``: about 1 ms per
frozen class on the 2-core machine of issue #12, ~50 ms of ``rigwise infer``'s start-up for its
51 classes. The text depends only on the class (its fields, defaults, options) and the Python
version, so, like a ``.pyc`` file, the compiled code can be kept: per module of rigwise, a
``marshal`` file in the user's cache folder (``catalog/cache.py``'s, here because this module
imports nothing of rigwise) maps each text to its code object.

``install()`` (called by ``rigwise/__init__.py`` before any of rigwise's classes exists) puts a
stand-in for ``exec`` into the ``dataclasses`` module: for a class of a rigwise module it runs
the kept code of the very same text (else it compiles the text as ``exec`` would: no inherited
``__future__`` flags, file name ``<string>``, and keeps it); anything else goes to the
built-in ``exec`` untouched. The classes are the same dataclasses either way
(tests/test_dataclass_code.py compares them). A module's file is rewritten at exit when one of
its texts was new, with the texts that run used, so edits never pile up stale entries.

Safe fallbacks, as for the catalog cache: ``RIGWISE_NO_CACHE=1`` turns it off, a file that is
not the user's own or that others may write is ignored (loading code runs it), a corrupt file,
one of anything but code, or an unwritable folder means compiling as before.
"""

from __future__ import annotations

import atexit
import builtins
import dataclasses
import marshal
import os
import sys
from collections.abc import Callable
from types import CodeType
from typing import Any, BinaryIO

# The marshal format and bytecode belong to one Python build.
_TAG = f"{sys.implementation.cache_tag}-{sys.hexversion:x}"
_PREFIX = "rigwise"


def cache_folder_name() -> str | None:
    """``$RIGWISE_CACHE_DIR``, else ``$XDG_CACHE_HOME/rigwise``, else ``~/.cache/rigwise``;
    None when the cache is off (``RIGWISE_NO_CACHE``) or no home folder is known."""
    if os.environ.get("RIGWISE_NO_CACHE"):
        return None
    explicit = os.environ.get("RIGWISE_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME")
    if base:
        return os.path.join(base, "rigwise")
    home = os.path.expanduser("~")
    if home.startswith("~"):  # no home folder (some service accounts)
        return None
    return os.path.join(home, ".cache", "rigwise")


def trusted(path: str) -> bool:
    """Our own file that nobody else may rewrite (loading it runs its code)."""
    info = os.stat(path)
    owner_ok = not hasattr(os, "getuid") or info.st_uid == os.getuid()
    return owner_ok and not info.st_mode & 0o022


def write_atomically(path: str, dump: Callable[[BinaryIO], object]) -> None:
    """``dump`` into a temp file beside ``path`` (its folder made, 0o700), renamed to ``path``;
    nothing where that fails (unwritable folder, full disk, a value ``dump`` cannot write): a
    cache entry not written is built or compiled again next time."""
    import tempfile  # only when writing (a cache hit needs none)

    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        handle, temp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    except OSError:
        return
    try:
        with os.fdopen(handle, "wb") as out:
            dump(out)
        os.replace(temp, path)
    except Exception:
        if os.path.exists(temp):
            os.unlink(temp)


class CodeCache:
    """The kept code of each rigwise module's dataclass methods, read on the module's first
    class, written back at exit for the modules that had a new text."""

    def __init__(self, folder: str | None) -> None:
        self.folder = folder
        self.kept: dict[str, dict[str, CodeType]] = {}  # module -> text -> code (from disk)
        self.used: dict[str, dict[str, CodeType]] = {}  # module -> text -> code (this run)
        self.changed: set[str] = set()

    def path(self, module: str) -> str:
        assert self.folder is not None
        return os.path.join(self.folder, f"dataclass-code-{_TAG}", f"{module}.marshal")

    def code(self, module: str, text: str) -> CodeType:
        kept = self.kept.get(module)
        if kept is None:
            kept = self.kept[module] = self._read(module)
        code = kept.get(text)
        if code is None:
            code = _compile(text)
            self.changed.add(module)
        self.used.setdefault(module, {})[text] = code
        return code

    def _read(self, module: str) -> dict[str, CodeType]:
        if self.folder is None:
            return {}
        path = self.path(module)
        try:
            if trusted(path):
                with open(path, "rb") as handle:
                    table = marshal.loads(handle.read())  # load(file) reads piece by piece
                # A well-formed file of other values (not code) would fail in exec at import.
                if isinstance(table, dict) and all(type(c) is CodeType for c in table.values()):
                    return table
        except Exception:  # missing, unreadable or corrupt: compile as before
            pass
        return {}

    def write(self) -> None:
        """Rewrite the files of the modules that had a new text; only inside a cache folder
        that exists (a run never creates it just for this, e.g. after a test removed it)."""
        if self.folder is None or not self.changed or not os.path.isdir(self.folder):
            return
        for module in sorted(self.changed):
            self._write(module, self.used[module])
        self.changed.clear()

    def _write(self, module: str, table: dict[str, CodeType]) -> None:
        write_atomically(self.path(module), lambda out: marshal.dump(table, out))


def _module_of(scope: object) -> str | None:
    """The rigwise module whose namespace ``dataclasses`` compiles in, else None."""
    if not isinstance(scope, dict):
        return None
    name = scope.get("__name__")
    if isinstance(name, str) and (name == _PREFIX or name.startswith(_PREFIX + ".")):
        return name
    return None


_CACHE: CodeCache | None = None


def _exec(source: Any, scope: Any = None, local: Any = None, /) -> None:
    """``exec`` as ``dataclasses`` calls it, with the kept code for rigwise's classes."""
    module = _module_of(scope)
    if type(source) is not str:
        builtins.exec(source, scope, local)
    elif _CACHE is None or module is None:
        builtins.exec(_compile(source), scope, local)
    else:
        builtins.exec(_CACHE.code(module, source), scope, local)


def _compile(text: str) -> CodeType:
    """What ``exec(text, ...)`` in ``dataclasses`` compiles: its module has no ``__future__``
    imports, and a stand-in must not pass on this module's (annotations would turn into
    strings)."""
    return compile(text, "<string>", "exec", dont_inherit=True)


def install() -> None:
    """Route ``dataclasses``' compiling through the cache (once per process)."""
    global _CACHE
    if _CACHE is not None:
        return
    _CACHE = CodeCache(cache_folder_name())
    dataclasses.exec = _exec  # type: ignore[attr-defined]
    atexit.register(_CACHE.write)
