"""Hardware: devices, links, nodes and clusters, built from the catalog.

Layers, bottom-up (no cycles): ``types`` (frozen dataclasses, SI units inside) <- ``names``
(what people type -> catalog ids) <- ``catalog`` (reading accelerators*.csv, interconnects.csv,
systems.yaml) <- ``nodes`` (nodes and clusters from text and YAML) <- this module (the lookups).

INTERFACE CONTRACT (used by estimate/, search, design, probe, grid, web):
    accelerators() -> tuple[Accelerator, ...]
    get_accelerator(name) -> Accelerator            # raises UnknownNameError (3 suggestions)
    resolve_accelerator(name) -> Resolution         # the device plus the other variants a family
                                                    # name ("M3 Max") also matched
    links() / get_link(name) -> Link
    systems() / get_system(name) -> SystemPreset
    parse_node(text, nodes=1, network=None) -> Cluster   # "2x rtx-3090+nvlink", "dgx-h100", ...
    load_cluster_file(path) -> Cluster              # YAML, format in catalog/SCHEMA.md

An absent interconnects or systems file gives an empty tuple, never an error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rigwise.hardware.catalog import accelerator_catalog, link_catalog, system_catalog
from rigwise.hardware.nodes import node_from_text, parse_node
from rigwise.hardware.types import (
    DTYPES,
    Accelerator,
    Cluster,
    Link,
    Node,
    Resolution,
    SystemPreset,
)

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "DTYPES",
    "Accelerator",
    "Cluster",
    "Link",
    "Node",
    "Resolution",
    "SystemPreset",
    "accelerators",
    "get_accelerator",
    "get_link",
    "get_system",
    "links",
    "load_cluster_file",
    "node_from_text",
    "parse_node",
    "resolve_accelerator",
    "systems",
]


def load_cluster_file(path: str | Path) -> Cluster:
    """A cluster described in YAML (format: catalog/SCHEMA.md, section "Cluster files")."""
    from rigwise.hardware.cluster_file import load_cluster_file as load

    return load(path)


def accelerators() -> tuple[Accelerator, ...]:
    """Every device in ``accelerators*.csv``, in file order (accelerators.csv first)."""

    return accelerator_catalog().devices


def resolve_accelerator(name: str) -> Resolution:
    """The device ``name`` stands for: ids, names, aliases, nvidia-smi names, family names."""

    return accelerator_catalog().resolve(name)


def get_accelerator(name: str) -> Accelerator:
    """The device ``name`` stands for; ``UnknownNameError`` with 3 suggestions otherwise."""
    return resolve_accelerator(name).accelerator


def links() -> tuple[Link, ...]:
    """Every interconnect in ``interconnects.csv`` (empty when the file is absent)."""

    return link_catalog().items


def get_link(name: str) -> Link:

    return link_catalog().get(name)


def systems() -> tuple[SystemPreset, ...]:
    """Every preset in ``systems.yaml`` (empty when the file is absent)."""

    return system_catalog().items


def get_system(name: str) -> SystemPreset:

    return system_catalog().get(name)
