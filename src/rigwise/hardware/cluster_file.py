"""Cluster files: a heterogeneous cluster described in YAML (format: catalog/SCHEMA.md,
section "Cluster files"), validated with pydantic (the edge) into a ``Cluster``.

Its own module so that planning on ``--on`` text never loads pydantic's models for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import ConfigDict, Field

from rigwise.errors import InputError, shown_value
from rigwise.file_model import FileModel
from rigwise.hardware.catalog import link_catalog
from rigwise.hardware.nodes import MAX_NODE_TEXT, MAX_NODES, check_cluster_size, node_from_text
from rigwise.hardware.types import Cluster, Node
from rigwise.units import GiB

_EXAMPLE = 'nodes: [{on: "2x rtx-3090+nvlink", count: 2}]\nnetwork: 10gbe'
MAX_CLUSTER_FILE_BYTES = 1024 * 1024


class ClusterNodeEntry(FileModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    on: Annotated[str, Field(min_length=1, max_length=MAX_NODE_TEXT)]
    count: Annotated[int, Field(ge=1, le=MAX_NODES)] = 1
    host_memory_gb: Annotated[float, Field(gt=0, le=1e9, allow_inf_nan=False)] | None = None


class ClusterFile(FileModel):
    model_config = ConfigDict(extra="forbid")

    nodes: Annotated[list[ClusterNodeEntry], Field(min_length=1, max_length=10_000)]
    network: Annotated[str, Field(max_length=MAX_NODE_TEXT)] | None = None


def _unbool_keys(value: Any) -> Any:
    """YAML 1.1 reads a bare ``on:`` key as ``True``; give it its name back."""
    if isinstance(value, dict):
        return {("on" if k is True else k): _unbool_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unbool_keys(v) for v in value]
    return value


def _load_yaml(path: Path) -> Any:
    from rigwise.validate_input import load_yaml, read_user_text

    try:
        text = read_user_text(path, "cluster file", max_bytes=MAX_CLUSTER_FILE_BYTES)
        return _unbool_keys(load_yaml(text, f"Cluster file {shown_value(str(path), 240)}"))
    except InputError as exc:
        hint = f"See catalog/SCHEMA.md, section 'Cluster files'. Example:\n{_EXAMPLE}"
        raise InputError(exc.message, hint=hint) from None


def _validated(path: Path, data: Any) -> ClusterFile:
    from rigwise.validate_input import validated

    if not isinstance(data, dict):
        raise InputError(
            f"Cluster file {str(path)!r} must be a mapping with a 'nodes' list.",
            hint=f"Example:\n{_EXAMPLE}",
        )
    return validated(
        ClusterFile,
        data,
        f"Cluster file {str(path)!r}",
        f"Keys: nodes (list of on, count, host_memory_gb) and network. E.g.\n{_EXAMPLE}",
    )


def read_cluster_file(path: Path) -> Cluster:
    """A cluster from YAML; names inside are resolved like on the command line."""
    spec = _validated(path, _load_yaml(path))
    check_cluster_size(sum(entry.count for entry in spec.nodes), 0)
    nodes: list[Node] = []
    for index, entry in enumerate(spec.nodes):
        memory = entry.host_memory_gb * GiB if entry.host_memory_gb else None
        try:
            node = node_from_text(entry.on, host_memory_bytes=memory)
        except InputError as exc:
            raise InputError(
                f"Cluster file {str(path)!r}, key 'nodes.{index}.on': {exc.message}", hint=exc.hint
            ) from exc
        nodes.extend([node] * entry.count)
    network = None
    if spec.network:
        try:
            network = link_catalog().get(spec.network)
        except InputError as exc:
            raise InputError(
                f"Cluster file {str(path)!r}, key 'network': {exc.message}", hint=exc.hint
            ) from exc
    check_cluster_size(len(nodes), sum(node.count for node in nodes))
    return Cluster(nodes=tuple(nodes), network=network)


def load_cluster_file(path: str | Path) -> Cluster:
    """A cluster described in YAML (format: catalog/SCHEMA.md, section "Cluster files")."""

    return read_cluster_file(Path(path))
