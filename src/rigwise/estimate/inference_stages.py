"""The pipeline stages of an inference deployment: which devices hold which share of the layers.

A pipeline stage is ``tp`` identical devices of one node (or of several, for a multi-node
tensor/expert-parallel group) holding ``layer_fraction`` of the layers: layer split = one device
per stage; tensor parallel = a whole node per stage. Layers go in proportion to the memory each
stage's engine may use (``estimate.engine_overheads.usable_memory_bytes``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

from rigwise.errors import InputError
from rigwise.estimate.engine_overheads import EngineOverheads, usable_memory_bytes
from rigwise.hardware import Accelerator, Cluster, Link, Node


@dataclass(frozen=True)
class Stage:
    """One pipeline stage: ``tp`` identical devices of one node holding a share of the layers."""

    index: int
    node_index: int
    accelerator: Accelerator
    tp: int
    layer_fraction: float
    intra_link: Link | None
    host_memory_bytes: float | None
    host_bandwidth_bytes_per_s: float | None
    offloaded_fraction: float = 0.0  # share of this stage's weights held in host RAM
    attention_dp: int = (
        1  # attention data-parallel ranks among the tp devices (SGLang dp-attention)
    )
    ep: int = 1  # expert-parallel ranks among the tp devices (routed experts sharded, not split)
    nodes_spanned: int = 1  # a stage wider than one node runs its collectives over the network

    # cached: asked for by every formula of every plan (a frozen instance's __dict__ holds it)
    @functools.cached_property
    def attention_tp(self) -> int:
        """Devices that split one attention rank's heads (tp / attention_dp)."""
        return max(1, self.tp // self.attention_dp)

    @functools.cached_property
    def label(self) -> str:
        devices = f"{self.tp}x " if self.tp > 1 else ""
        return f"node{self.node_index}/stage{self.index}: {devices}{self.accelerator.id}"


def _width(node: Node, index: int, split: str, tp: int | None, repeat: int) -> tuple[int, int]:
    """(tp width, nodes one group spans) for a run of ``repeat`` identical nodes. A width that
    is a multiple of the node's devices spans that many nodes (multi-node TP/EP groups)."""
    width = tp or (node.count if split == "tensor" else 1)
    if width > node.count and width % node.count == 0:
        span = width // node.count
        if repeat % span:
            raise InputError(
                f"--tp {width} spans {span} nodes but {repeat} identical ones start at "
                f"node {index}.",
                hint="Use a tensor-parallel size that fits the nodes given (--nodes).",
            )
        return width, span
    if width < 1 or node.count % width:
        raise InputError(
            f"--tp {width} does not divide node {index}'s {node.count} devices.",
            hint="Use a tensor-parallel size that divides the devices of every node.",
        )
    return width, 1


def _groups(
    cluster: Cluster, split: str, tp: int | None, cap: int | None
) -> tuple[list[tuple[int, Node, int, int]], int]:
    """(first node index, node, tp width, nodes spanned) of every tensor-parallel group, at
    most ``cap`` of them, and how many the cluster has."""
    groups: list[tuple[int, Node, int, int]] = []
    available = index = 0
    for node, repeat in cluster.runs:  # identical nodes in a row: one step, not one per node
        width, span = _width(node, index, split, tp, repeat)
        per_node = max(1, node.count // width)
        available += per_node * repeat // span
        for copy in range(0, repeat, span):
            room = per_node if cap is None else min(per_node, cap - len(groups))
            if room <= 0:
                break
            groups.extend((index + copy, node, width, span) for _ in range(room))
        index += repeat
    return groups, available


def group_count(cluster: Cluster, split: str, tp: int | None) -> int:
    """How many tensor-parallel groups of ``tp`` the cluster has (without building them)."""
    return _groups(cluster, split, tp, 0)[1]


def build_stages(
    cluster: Cluster,
    split: str,
    tp: int | None,
    pp: int | None,
    overheads_for: Callable[[Accelerator], EngineOverheads],
    max_stages: int | None = None,
    attention_dp: int = 1,
    ep: int = 1,
) -> tuple[Stage, ...]:
    """Pipeline stages for a cluster: ``split`` 'layer' (a device per stage) or 'tensor'
    (a node per stage), or an explicit ``tp`` x ``pp``. Layers go in proportion to the
    memory each stage can use (llama.cpp's default --tensor-split; vLLM splits evenly on
    identical devices, which is the same thing). At most ``max_stages`` stages (a model's
    layer count: a stage holds at least one layer), so the work is bounded whatever the
    cluster's size; devices past that hold no layers."""
    cap = min(x for x in (max_stages, pp) if x is not None) if (max_stages or pp) else None
    groups, available = _groups(cluster, split, tp, cap)
    if pp is not None:
        if max_stages is not None and pp > max_stages:
            raise InputError(
                f"--pp {pp} is more pipeline stages than the model's {max_stages} layers.",
                hint=f"Use --pp {max_stages} or less.",
            )
        if pp < 1 or pp > available:
            _too_few_devices(cluster, pp, tp, groups[0][2] if groups else tp or 1)
        groups = groups[:pp]
    weights = [
        usable_memory_bytes(n.accelerator, overheads_for(n.accelerator)) * w
        for _, n, w, _ in groups
    ]
    return tuple(
        Stage(
            index=i,
            node_index=node_index,
            accelerator=node.accelerator,
            tp=width,
            layer_fraction=weight / sum(weights),
            intra_link=node.intra_link if span == 1 else cluster.network,
            host_memory_bytes=node.host_memory_bytes,
            host_bandwidth_bytes_per_s=node.host_memory_bandwidth_bytes_per_s,
            attention_dp=attention_dp,
            ep=ep,
            nodes_spanned=span,
        )
        for i, ((node_index, node, width, span), weight) in enumerate(
            zip(groups, weights, strict=True)
        )
    )


def _too_few_devices(cluster: Cluster, pp: int, tp: int | None, width: int) -> NoReturn:
    """``pp`` stages of ``width`` devices are more than the cluster has. Without --tp a
    tensor-split stage is a whole node, which the message must say (it said '--tp 1')."""
    total = cluster.accelerator_count
    hint = "Lower --pp or --tp, or add devices (--on 'Nx GPU', --nodes)."
    smaller = [d for d in range(width - 1, 0, -1) if width % d == 0 and d * pp <= total]
    if tp is None and smaller:
        hint = (
            f"Without --tp a stage is a whole node of {width} devices; give --tp too "
            f"(e.g. --tp {smaller[0]} --pp {pp}), or add devices."
        )
    raise InputError(
        f"--pp {pp} stages of --tp {width} need {pp * width} devices; {total} given.", hint=hint
    )


def can_offload(stage: Stage) -> bool:
    """Offload needs separate host RAM: not on CPUs or unified-memory (Apple) devices."""
    kind = stage.accelerator.kind
    host = bool(stage.host_memory_bytes) and bool(stage.host_bandwidth_bytes_per_s)
    return kind not in ("cpu", "unified") and host
