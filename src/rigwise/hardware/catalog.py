"""Reading the hardware catalog: accelerators*.csv, interconnects.csv, systems.yaml.

Rows are validated with pydantic (``hardware.catalog_rows``, the edge) and turned into the frozen
dataclasses of ``hardware.types`` (the inside). Every bad value is a ``CatalogError`` naming
file, row, id and column. Absent interconnects/systems files give empty tables. The built tables
are kept in a disk cache keyed by the files' bytes (``catalog.cache``), so a command that finds
them there loads neither pydantic nor YAML for them; the files stay the single source of truth.

Name resolution (tables in ``hardware.names``): every id, display name, alias and ``default_for``
name is a key, also followed by the memory size ("4090 24GB"). A key shared by several rows (a
family name such as "M3 Max") picks the row whose ``default_for`` names it, else the first such
row in file order; a name that only prefixes keys ("rtx40") picks the biggest variant.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rigwise.catalog.cache import cached_build
from rigwise.catalog.loader import packaged_file, packaged_names, read_csv, read_yaml
from rigwise.hardware.names import KEY_TIERS, NameTable, build_table, normalize
from rigwise.hardware.types import Accelerator, Link, Resolution, SystemPreset
from rigwise.units import GiB


def _memory_label(memory_bytes: float) -> str:
    gb = memory_bytes / GiB
    return f"{gb:g}GB"


def _accelerator_names(acc: Accelerator) -> list[str]:
    base = [acc.name, *acc.aliases, *acc.default_for]
    return [acc.id, *base, *(f"{name} {_memory_label(acc.memory_bytes)}" for name in base)]


@dataclass(frozen=True)
class AcceleratorCatalog:
    """The accelerator rows by name (built once, cached on disk)."""

    table: NameTable[Accelerator]

    @property
    def devices(self) -> tuple[Accelerator, ...]:
        return self.table.items

    def resolve(self, name: str) -> Resolution:
        ids = self.table.ids_for(name)
        if not ids:
            ids = self._prefix_family(name)
        if not ids:
            raise self.table.unknown(name)
        chosen = self._default(name, ids)
        others = tuple(i for i in ids if i != chosen)
        if not others and self._is_family_name(name, chosen):
            # 'M3 Max' names one row (its default_for), but the family has more variants.
            others = tuple(i for i in self._prefix_family(name) if i != chosen)
        return Resolution(query=name, accelerator=self.table.by_id[chosen], alternatives=others)

    def _is_family_name(self, name: str, device_id: str) -> bool:
        key = normalize(name)
        return any(normalize(d) == key for d in self.table.by_id[device_id].default_for)

    def _default(self, name: str, ids: tuple[str, ...]) -> str:
        keys = {key_of(name) for key_of in KEY_TIERS}
        for device_id in ids:
            defaults = self.table.by_id[device_id].default_for
            if any(key_of(d) in keys for d in defaults for key_of in KEY_TIERS):
                return device_id
        return ids[0]

    def _prefix_family(self, name: str) -> tuple[str, ...]:
        """'M3 Max' when only 'M3 Max 40-core 128GB' rows exist: the ids whose keys extend it.

        The biggest variant (most bf16 FLOP/s, then most memory) comes first, so a family name
        picks the largest-GPU, largest-memory variant unless a row's ``default_for`` says otherwise.
        """
        key = normalize(name)
        if len(key) < 3:
            return ()
        ids = {i for k, v in self.table.keys.items() if k.startswith(key) for i in v}
        ranked = sorted(
            ids,
            key=lambda i: (
                -self.table.by_id[i].peak_flops("bf16"),
                -self.table.by_id[i].memory_bytes,
                i,
            ),
        )
        return tuple(ranked)


def _package_files(pattern: str) -> list[str]:
    names = [name for name in packaged_names() if re.fullmatch(pattern, name)]
    return sorted(names, key=lambda n: (n != "accelerators.csv", n))


def _has_file(name: str) -> bool:
    found = packaged_file(name)
    return os.path.isfile(found) if isinstance(found, str) else bool(found.is_file())


def build_accelerators(files: Mapping[str, Iterable[Mapping[str, str]]]) -> AcceleratorCatalog:
    """Validate rows (file name -> rows as read) and index them; duplicate ids are an error."""
    from rigwise.hardware.catalog_rows import accelerator_rows

    devices = accelerator_rows(files)
    return AcceleratorCatalog(build_table("GPU", devices, _accelerator_names, lambda a: a.id))


def build_links(
    rows: Iterable[Mapping[str, str]], file: str = "interconnects.csv"
) -> NameTable[Link]:
    from rigwise.hardware.catalog_rows import link_rows

    items = link_rows(rows, file)
    return build_table("link", items, lambda lk: [lk.id, lk.name, *lk.aliases], lambda lk: lk.id)


def build_systems(entries: Any, file: str = "systems.yaml") -> NameTable[SystemPreset]:
    from rigwise.hardware.catalog_rows import system_entries

    items = system_entries(entries, file)
    return build_table("system", items, lambda s: [s.id, s.name, *s.aliases], lambda s: s.id)


# The code whose output the disk cache holds: a change to any of these files is a new cache key.
_BUILDERS = (
    "hardware/catalog.py",
    "hardware/catalog_rows.py",
    "hardware/names.py",
    "hardware/types.py",
    "catalog/names.py",
    "catalog/loader.py",
    "units.py",
)


def _inputs(*data_files: str) -> list[Any]:
    """The files a table is built from: its data files, the name rewrites, the builders."""
    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    data = [packaged_file(name) for name in (*data_files, "name_rewrites.csv")]
    return [*data, *(os.path.join(package, source) for source in _BUILDERS)]


@functools.cache
def accelerator_catalog() -> AcceleratorCatalog:
    names = _package_files(r"accelerators.*\.csv")
    return cached_build(
        "accelerators",
        _inputs(*names),
        lambda: build_accelerators({name: read_csv(name) for name in names}),
    )


@functools.cache
def link_catalog() -> NameTable[Link]:
    if not _has_file("interconnects.csv"):
        return build_links(())
    return cached_build(
        "links", _inputs("interconnects.csv"), lambda: build_links(read_csv("interconnects.csv"))
    )


@functools.cache
def system_catalog() -> NameTable[SystemPreset]:
    if not _has_file("systems.yaml"):
        return build_systems([])
    return cached_build(
        "systems", _inputs("systems.yaml"), lambda: build_systems(read_yaml("systems.yaml"))
    )
