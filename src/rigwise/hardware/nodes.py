"""Nodes and clusters from text ("2x rtx-3090+nvlink", "dgx-h100"); YAML cluster files are
read by ``hardware.cluster_file`` (with these same node parsers).

The intra-node link defaults to the device's own NVLink/NVSwitch (SXM and OAM parts) or its PCIe
generation's link (``pcie4-x16`` style ids in interconnects.csv).
"""

from __future__ import annotations

import re

from rigwise.catalog.names import normalize
from rigwise.errors import (
    CatalogError,
    InputError,
    UnknownNameError,
    shown_value,
)
from rigwise.hardware.catalog import accelerator_catalog, link_catalog, system_catalog
from rigwise.hardware.types import Accelerator, Cluster, Link, Node, Resolution, SystemPreset

_COUNT_PREFIX = re.compile(r"^\s*(\d+)\s*[x×*]\s*(\S.*)$", re.IGNORECASE)
MAX_DEVICES = 1 << 20
"""Most accelerators in one plan (1,048,576: above the largest clusters built, ~10^5 GPUs)."""
MAX_NODES = 100_000
"""Most machines in one plan (--nodes, cluster files)."""
MAX_NODE_TEXT = 200
"""Longest node description accepted ('2x rtx-3090+nvlink' is 18 characters)."""


def split_count(text: str) -> tuple[int, str]:
    """'2x rtx-3090' -> (2, 'rtx-3090'); '7900 XTX' stays one name because 'XTX' is no device."""
    match = _COUNT_PREFIX.match(text)
    if match and (find_system(match[2]) or accelerator_catalog().table.ids_for(match[2])):
        return _positive_count(int(match[1]), text), match[2].strip()
    if match:
        try:
            accelerator_catalog().resolve(match[2])
            return _positive_count(int(match[1]), text), match[2].strip()
        except UnknownNameError:
            pass
    return 1, text.strip()


def _resolve_part(target: str) -> Resolution:
    """The catalog row of a node's device; an unknown '2x rtx-3091' names 'rtx-3091' (and
    suggests for it), not the whole text with its count."""
    try:
        return accelerator_catalog().resolve(target)
    except UnknownNameError:
        match = _COUNT_PREFIX.match(target)
        if match is None:
            raise
        accelerator_catalog().resolve(match[2])  # raises, naming the device part
        raise


def _positive_count(count: int, text: str) -> int:
    if count < 1 or count > MAX_DEVICES:
        raise InputError(
            f"Device count {count:,} in {shown_value(text)} is out of range.",
            hint=f"Use 1 to {MAX_DEVICES:,} devices per node, e.g. '8x h100-sxm' with --nodes.",
        )
    return count


def check_cluster_size(nodes: int, devices: int) -> None:
    """Bounds on a cluster's size, so that planning work stays bounded (InputError otherwise)."""
    if not 1 <= nodes <= MAX_NODES:
        raise InputError(
            f"nodes must be between 1 and {MAX_NODES:,}, not {nodes:,}.",
            hint=f"Use --nodes 1 to {MAX_NODES:,}.",
        )
    if devices > MAX_DEVICES:
        raise InputError(
            f"The cluster has {devices:,} accelerators, over the {MAX_DEVICES:,} rigwise plans.",
            hint="Use fewer nodes or fewer devices per node.",
        )


def find_system(name: str) -> SystemPreset | None:
    ids = system_catalog().ids_for(name)
    return system_catalog().by_id[ids[0]] if ids else None


def _link_by_bandwidth(kinds: tuple[str, ...], bandwidth: float) -> Link | None:
    """The catalog link of one of ``kinds`` whose bandwidth is the device's own (within 1 %)."""
    for link in link_catalog().items:
        if link.kind in kinds and abs(link.bandwidth_bytes_per_s - bandwidth) <= 0.01 * bandwidth:
            return link
    return None


def device_nvlink(acc: Accelerator) -> Link:
    """The device's own scale-up link (NVLink, Infinity Fabric, ICI) from its catalog row."""
    if acc.nvlink_bytes_per_s <= 0:
        raise InputError(
            f"{acc.name} has no NVLink (or other GPU-to-GPU link) in the catalog.",
            hint="Drop '+nvlink' to use PCIe, or pick a device with NVLink such as rtx-3090.",
        )
    known = _link_by_bandwidth(
        ("nvlink", "nvswitch", "infinity-fabric", "ici"), acc.nvlink_bytes_per_s
    )
    if known is not None:
        return known
    latency = min((lk.latency_s for lk in link_catalog().items if lk.kind == "nvlink"), default=0.0)
    return Link(
        id=f"{acc.id}-nvlink",
        name=f"{acc.name} NVLink",
        kind="nvlink",
        bandwidth_bytes_per_s=acc.nvlink_bytes_per_s,
        latency_s=latency,
        source=acc.source,
        retrieved=acc.retrieved,
    )


def intra_link_for(acc: Accelerator, requested: str | None) -> Link | None:
    """The link between a node's devices: as asked, else NVLink for SXM/OAM, else PCIe."""
    if requested is not None:
        if normalize(requested) in ("nvlink", "nvlinkbridge", "infinityfabric"):
            return device_nvlink(acc)
        return get_link_or_explain(requested)
    if acc.form_factor in ("sxm", "oam") and acc.nvlink_bytes_per_s > 0:
        return device_nvlink(acc)
    if acc.pcie_gen and acc.pcie_lanes:
        ids = link_catalog().ids_for(f"pcie{acc.pcie_gen}-x{acc.pcie_lanes}")
        return link_catalog().by_id[ids[0]] if ids else None
    return None


def get_link_or_explain(name: str) -> Link:
    if not link_catalog().items:
        raise CatalogError(
            f"No interconnect catalog is installed, so link {name!r} cannot be looked up.",
            hint="interconnects.csv is missing from rigwise/catalog/data.",
        )
    return link_catalog().get(name)


def node_from_system(
    system: SystemPreset, count: int, link_text: str | None, host_memory_bytes: float | None
) -> Node:
    """A system preset as a node; a count prefix ('2x dgx-h100') is not a node count here."""
    if count != 1:
        raise InputError(
            f"'{count}x {system.id}' multiplies a whole system.",
            hint=f"Use --nodes {count} (or 'count: {count}' in a cluster file) instead.",
        )
    acc = accelerator_catalog().resolve(system.accelerator_id).accelerator
    if link_text:
        link = intra_link_for(acc, link_text)
    elif system.intra_link_id:
        link = get_link_or_explain(system.intra_link_id)
    else:
        link = intra_link_for(acc, None)
    return Node(
        accelerator=acc,
        count=system.accelerator_count,
        intra_link=link,
        host_memory_bytes=host_memory_bytes or system.host_memory_bytes,
        name=system.name,
    )


def parse_node(text: str, nodes: int = 1, network: str | None = None) -> Cluster:
    """``[N x] DEVICE-OR-SYSTEM [+ LINK]`` repeated over ``nodes`` machines joined by ``network``.

    Examples: ``rtx-4090``, ``2x rtx-3090``, ``2x rtx-3090+nvlink``, ``4xA100 SXM 80GB``,
    ``dgx-h100``, a CPU row id. Without ``+LINK`` the devices talk over their own NVLink/NVSwitch
    (SXM/OAM parts) or their PCIe generation's link.
    """

    if isinstance(nodes, bool) or not isinstance(nodes, int):
        raise InputError(f"nodes must be a whole number, not {shown_value(nodes)}.")
    check_cluster_size(nodes, 0)
    mixed = mixed_rig(text) if nodes == 1 else None
    if mixed is not None:
        return mixed
    node = node_from_text(text)
    check_cluster_size(nodes, node.count * nodes)
    link = link_catalog().get(network) if network else None
    return Cluster(nodes=(node,) * nodes, network=link)


def _names_device(text: str) -> bool:
    """Whether ``[N x] NAME`` names a device or system (not a link such as 'nvlink')."""
    try:
        _, target = split_count(text)
        return find_system(target) is not None or bool(accelerator_catalog().table.ids_for(target))
    except (InputError, CatalogError):
        return False


def mixed_rig(text: str) -> Cluster | None:
    """'rtx-3090+rtx-4090+rtx-5090': different cards in one box, one node per part, joined by
    the slowest card's PCIe link. None when a part after '+' is a link ('2x rtx-3090+nvlink'):
    then it is one node of identical cards. A part may carry a count ('2x rtx-3090+rtx-4090')."""
    parts = [p.strip() for p in text.split("+")]
    if len(parts) < 2 or not all(parts) or not all(_names_device(p) for p in parts[1:]):
        return None
    nodes = tuple(node_from_text(part) for part in parts)
    links = [intra_link_for(n.accelerator, None) for n in nodes]
    known = [link for link in links if link is not None]
    network = min(known, key=lambda link: link.bandwidth_bytes_per_s) if known else None
    return Cluster(nodes=nodes, network=network)


def node_from_text(text: str, host_memory_bytes: float | None = None) -> Node:
    """One machine from ``[N x] DEVICE-OR-SYSTEM [+ LINK]`` (see ``parse_node``)."""

    if not text or not text.strip():
        raise InputError("Empty node description.", hint="Write it like '2x rtx-3090+nvlink'.")
    if len(text) > MAX_NODE_TEXT:
        raise InputError(
            f"Node description {shown_value(text)} is longer than {MAX_NODE_TEXT} characters.",
            hint="Write it like '2x rtx-3090+nvlink'.",
        )
    head, plus, link_text = text.partition("+")
    if plus and not link_text.strip():
        raise InputError(
            f"Nothing after '+' in {text!r}.", hint="Write it like '2x rtx-3090+nvlink'."
        )
    if not head.strip():  # '+nvlink' was "Unknown GPU ''. Did you mean: xeon-w9-3495x-..."
        raise InputError(
            f"No device before '+' in {text!r}.", hint="Write it like '2x rtx-3090+nvlink'."
        )
    count, target = split_count(head)
    system = find_system(target)
    if system is not None:
        return node_from_system(system, count, link_text.strip() or None, host_memory_bytes)
    accelerator = _resolve_part(target).accelerator
    link = intra_link_for(accelerator, link_text.strip() or None)
    return Node(
        accelerator=accelerator,
        count=count,
        intra_link=link,
        host_memory_bytes=host_memory_bytes,
        name=text.strip(),
    )
