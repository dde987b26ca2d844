"""Rigs as planner hardware: ``rig_to_cluster(rig) -> rigwise.hardware.Cluster``.

``rigwise infer/train --rig RIG.yaml`` plan on the described machine through this function: the
rig's GPUs become one Node, one per GPU model when the rig mixes models (the intra-node link is
NVLink when every GPU pair is bridged, else the PCIe link of the narrowest generation in
use), with the rig's RAM as host memory.
"""

from __future__ import annotations

from collections.abc import Callable

from rigwise.design.rigfile import Rig
from rigwise.errors import InputError
from rigwise.hardware import Cluster, Link, Node

LinkLookup = Callable[[str], Link]


def _default_link_lookup(name: str) -> Link:
    from rigwise.hardware import get_link

    link: Link = get_link(name)
    return link


def intra_link_name(rig: Rig) -> str | None:
    """The bridge's link when every GPU is bridged, else e.g. 'pcie3-x16' (slowest slot).

    NVLink bridges join pairs only; with more than two GPUs the pairs still talk over PCIe, and
    the planner's single intra-node link then flatters the rig (said in docs/build.md).
    """
    if len(rig.gpus) < 2:
        return None
    if rig.nvlink and len(rig.gpus) == 2:
        return rig.nvlink[0][0].text("link")
    generations, widths = [], []
    for gpu in rig.gpus:
        slot = rig.motherboard.slot(gpu.slot)
        gen = min(slot.gen if slot else 3, gpu.accelerator.pcie_gen or 3)
        if gpu.riser is not None:
            gen = min(gen, int(gpu.riser.number("max_gen", gen)))
        generations.append(gen)
        widths.append(min(slot.electrical_lanes if slot else 16, gpu.lanes))
    return f"pcie{min(generations)}-x{min(widths)}"


def rig_to_cluster(rig: Rig, link_lookup: LinkLookup | None = None) -> Cluster:
    """One Node with the rig's GPUs; a rig that mixes GPU models becomes one node per model
    joined by the rig's slowest PCIe link (a mixed rig: layers split by memory)."""
    if not rig.gpus:
        raise InputError(f"Rig {rig.name!r} has no GPUs to plan on.", hint="Add a 'gpus:' list.")
    lookup = link_lookup or _default_link_lookup
    if len(_models(rig)) > 1:
        return _mixed(rig, lookup)
    name = intra_link_name(rig)
    intra = None
    if name is not None:
        try:
            intra = lookup(name)
        except InputError:
            intra = lookup(name.split("-")[0] + "-x16") if name.startswith("pcie") else None
    node = Node(
        accelerator=rig.gpus[0].accelerator,
        count=len(rig.gpus),
        intra_link=intra,
        host_memory_bytes=rig.ram_bytes,
        name=rig.name,
    )
    return Cluster(nodes=(node,), network=None)


def _models(rig: Rig) -> dict[str, int]:
    """GPU model id -> count, in the rig's order."""
    counts: dict[str, int] = {}
    for gpu in rig.gpus:
        counts[gpu.accelerator.id] = counts.get(gpu.accelerator.id, 0) + 1
    return counts


def _mixed(rig: Rig, lookup: LinkLookup) -> Cluster:
    name = intra_link_name(rig)
    link = lookup(name) if name and name.startswith("pcie") else None
    by_id = {g.accelerator.id: g.accelerator for g in rig.gpus}
    nodes = tuple(
        Node(
            accelerator=by_id[device],
            count=count,
            intra_link=link if count > 1 else None,
            host_memory_bytes=rig.ram_bytes,
            name=f"{rig.name}: {device}",
        )
        for device, count in _models(rig).items()
    )
    return Cluster(nodes=nodes, network=link)


def load_rig_cluster(path: str) -> Cluster:
    """``rigwise infer/train --rig RIG.yaml``: the rig file at ``path`` as planner hardware."""
    from rigwise.design.rigfile import load_rig

    return rig_to_cluster(load_rig(path))


def rig_on_text(path: str) -> str:
    """The rig at ``path`` as the planners' ``--on`` text: '<N>x <gpu>+<intra link>'."""
    cluster = load_rig_cluster(path)
    if len(cluster.nodes) > 1:  # a mixed rig: 'Nx gpu+gpu+...' (hardware.nodes.mixed_rig)
        return "+".join(
            f"{n.count}x {n.accelerator.id}" if n.count > 1 else n.accelerator.id
            for n in cluster.nodes
        )
    node = cluster.nodes[0]
    link = f"+{node.intra_link.id}" if node.intra_link is not None and node.count > 1 else ""
    return f"{node.count}x {node.accelerator.id}{link}"
