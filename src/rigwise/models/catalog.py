"""Catalog models: one HF ``config.json`` per file in ``catalog/data/models/``.

Each file is the published config (numbers copied as data) plus a ``_rigwise`` object with the
catalog name, aliases, hub repo, source URL, retrieval date and the published parameter count.
Files are parsed once per process; ``load_catalog_model`` is a dict lookup after the first call.
Finding one model reads one file: the names index (aliases -> catalog name -> file) is kept in
the catalog's disk cache (``catalog.cache``, keyed by every model file's bytes).
"""

from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass, replace
from typing import Any

from rigwise.catalog.names import normalize
from rigwise.errors import CatalogError, ModelFormatError, UnknownNameError, closest
from rigwise.models.arch import read_arch
from rigwise.models.build import spec_from_arch
from rigwise.models.spec import ModelSpec

_FOLDER = "models"
# Fine-tuned variants share the base architecture: these words are dropped when a name misses.
_VARIANT_WORDS = re.compile(r"(?:^|[\s\-_/])(instruct|it|chat|hf|base)(?=$|[\s\-_/])", re.I)


@dataclass(frozen=True)
class CatalogEntry:
    """One catalog model file: its config and the ``_rigwise`` provenance fields."""

    name: str
    aliases: tuple[str, ...]
    hf_repo: str
    source: str
    retrieved: str
    params_published: dict[str, Any]
    config: dict[str, Any]
    file: str


def _entry(file_name: str, text: str) -> CatalogEntry:
    where = f"catalog/data/{_FOLDER}/{file_name}"
    try:
        data = json.loads(text)
        meta = data.pop("_rigwise")
        return CatalogEntry(
            name=meta["name"],
            aliases=tuple(meta.get("aliases", ())),
            hf_repo=meta.get("hf_repo", ""),
            source=meta["source"],
            retrieved=meta["retrieved"],
            params_published=dict(meta.get("params_published", {})),
            config=data,
            file=where,
        )
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise CatalogError(f"{where}: malformed catalog model ({exc!r}).") from exc


def _files() -> list[str]:
    """The names of the catalog model files, in order."""
    from rigwise.catalog.loader import packaged_names

    return sorted(name for name in packaged_names(_FOLDER) if name.endswith(".json"))


def _read(file_name: str) -> CatalogEntry:
    from rigwise.catalog.loader import packaged_text

    return _entry(file_name, packaged_text(_FOLDER, file_name))


@functools.cache
def catalog_entries() -> dict[str, CatalogEntry]:
    """Every catalog model file, by catalog name."""
    entries = [_read(file_name) for file_name in _files()]
    return {entry.name: entry for entry in entries}


@dataclass(frozen=True)
class _NameIndex:
    """What finding one model needs: normal-form alias -> catalog name, catalog name -> file."""

    aliases: dict[str, str]
    files: dict[str, str]


def _build_index() -> _NameIndex:
    table: dict[str, str] = {}
    for entry in catalog_entries().values():
        repo_tail = entry.hf_repo.split("/")[-1]
        for alias in (entry.name, *entry.aliases, entry.hf_repo, repo_tail):
            if alias:
                table.setdefault(normalize(alias), entry.name)
    files = {name: entry.file.rsplit("/", 1)[-1] for name, entry in catalog_entries().items()}
    return _NameIndex(table, files)


# The code whose output the disk cache holds: a change to any of these is a new cache key.
_BUILDERS = ("models/catalog.py", "catalog/names.py")


@functools.cache
def _index() -> _NameIndex:
    """The name index, kept in the catalog's disk cache (keyed by every model file's bytes):
    a command that plans one model parses one file, not all of them."""
    from rigwise.catalog.cache import cached_build
    from rigwise.catalog.loader import packaged_file

    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    inputs = [
        *(packaged_file(_FOLDER, file_name) for file_name in _files()),
        *(os.path.join(package, source) for source in _BUILDERS),
    ]
    return cached_build("model-names", inputs, _build_index)


def _alias_table() -> dict[str, str]:
    return _index().aliases


@functools.cache
def catalog_entry(name: str) -> CatalogEntry:
    """One catalog model by its catalog name, read from its own file only."""
    return _read(_index().files[name])


def resolve_model_name(name: str) -> tuple[str, tuple[str, ...]]:
    """(catalog name, notes) for what a user typed; instruct/chat/it variants map to the base."""
    table = _alias_table()
    key = normalize(name)
    if key in table:
        return table[key], ()
    base = _VARIANT_WORDS.sub(" ", name)
    tail = base.split("/")[-1]
    for candidate in (base, tail):
        if normalize(candidate) in table:
            found = table[normalize(candidate)]
            note = f"{name!r} is a fine-tuned variant; it shares the architecture of {found}"
            return found, (note,)
    names = list(catalog_entries())
    by_key = {normalize(n): n for n in names}
    raise UnknownNameError("model", name, [by_key[k] for k in closest(key, list(by_key))])


@functools.cache
def _catalog_spec(name: str) -> ModelSpec:
    entry = catalog_entry(name)
    try:
        arch = read_arch(entry.config, entry.file)
    except ModelFormatError as exc:
        raise CatalogError(str(exc)) from exc
    return spec_from_arch(arch, name=entry.name, source=entry.source)


def load_catalog_model(name: str) -> ModelSpec:
    found, notes = resolve_model_name(name)
    spec = _catalog_spec(found)
    return replace(spec, notes=(*spec.notes, *notes)) if notes else spec


def catalog_models() -> tuple[ModelSpec, ...]:
    """Every catalog model, in file order."""
    return tuple(_catalog_spec(name) for name in catalog_entries())
