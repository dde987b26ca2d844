"""Topology-aware, all-or-nothing placement: a job's hardware profile + the admitted nodes ->
Ray placement-group bundles, strategy and label selectors. Pure; ``ray_adapter`` applies it.

Rules (seed 001: place work with the hardware topology in mind):
- one node (``nodes: 1``): one bundle holding every GPU, ``STRICT_PACK``; with
  ``same_nvlink_domain`` only nodes whose largest NVLink domain holds that many GPUs qualify;
- several nodes: one bundle per node, ``STRICT_SPREAD``; with ``same_switch`` all bundles carry
  one ``switch`` label, the switch with the most qualifying nodes;
- labels asked by the job must match the node's labels exactly;
- GPU memory (measured at join) is checked here, since Ray only counts GPUs.
Qualifying nodes are pinned with a ``rigwise.io/node-id in(...)`` selector, so Ray never places a
bundle on a node the grid did not admit or that does not meet the profile.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from rigwise.serialize import JsonObject

LABEL_PREFIX = "rigwise.io/"
NODE_ID_LABEL = LABEL_PREFIX + "node-id"
SWITCH_LABEL = "switch"
NVLINK_GPUS_LABEL = "nvlink-domain-gpus"
_LABEL_VALUE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class HardwareProfile:
    """Step 1 of a job template: what the job needs, as counts and constraints."""

    nodes: int = 1
    cpus_per_node: float = 1.0
    gpus_per_node: int = 0
    min_gpu_memory_bytes: float = 0.0
    same_nvlink_domain: bool = False
    same_switch: bool = False
    labels: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class NodeView:
    """An admitted node as placement sees it (grid labels without the prefix)."""

    id: str
    labels: dict[str, str]
    cpus: float
    gpus: int
    gpu_memory_bytes: float


@dataclass(frozen=True)
class PlacementPlan(JsonObject):
    feasible: bool
    reason: str
    strategy: str = "STRICT_PACK"
    bundles: tuple[dict[str, float], ...] = ()
    bundle_label_selector: tuple[dict[str, str], ...] = ()
    candidates: tuple[str, ...] = ()


def label_value(text: str) -> str:
    """A string made safe as a Ray label value (letters, digits, ``-_.``, at most 63)."""
    cleaned = _LABEL_VALUE.sub("-", str(text)).strip("-_.")
    return (cleaned or "none")[:63]


def _why_not(profile: HardwareProfile, node: NodeView) -> str | None:
    for key, wanted in profile.labels.items():
        if node.labels.get(key) != label_value(wanted):
            return f"label {key}={wanted} missing"
    if node.cpus < profile.cpus_per_node:
        return f"fewer than {profile.cpus_per_node:g} CPUs"
    if node.gpus < profile.gpus_per_node:
        return f"fewer than {profile.gpus_per_node} GPUs"
    if profile.gpus_per_node and node.gpu_memory_bytes < profile.min_gpu_memory_bytes:
        return "GPU memory below the minimum"
    if profile.same_nvlink_domain and profile.gpus_per_node > 1:
        domain = int(float(node.labels.get(NVLINK_GPUS_LABEL, "0") or 0))
        if domain < profile.gpus_per_node:
            return f"no NVLink domain of {profile.gpus_per_node} GPUs"
    return None


def _bundle(profile: HardwareProfile) -> dict[str, float]:
    bundle: dict[str, float] = {"CPU": float(profile.cpus_per_node)}
    if profile.gpus_per_node:
        bundle["GPU"] = float(profile.gpus_per_node)
    return bundle


def _infeasible(profile: HardwareProfile, total: int, rejections: Counter[str]) -> PlacementPlan:
    counted = ", ".join(f"{count} {why}" for why, count in rejections.most_common())
    need = f"{profile.nodes} node(s)"
    detail = f": {counted}" if counted else ""
    return PlacementPlan(False, f"needs {need}; {total} admitted node(s) checked{detail}")


def plan_placement(profile: HardwareProfile, nodes: list[NodeView]) -> PlacementPlan:
    """Bundles, strategy and selectors for ``profile`` on ``nodes``, or why it cannot fit now."""
    qualifying: list[NodeView] = []
    rejections: Counter[str] = Counter()
    for node in nodes:
        why = _why_not(profile, node)
        if why is None:
            qualifying.append(node)
        else:
            rejections[why] += 1
    selector: dict[str, str] = {}
    if profile.nodes > 1 and profile.same_switch:
        switches = Counter(node.labels.get(SWITCH_LABEL, "none") for node in qualifying)
        if switches:
            switch, _ = switches.most_common(1)[0]
            qualifying = [n for n in qualifying if n.labels.get(SWITCH_LABEL, "none") == switch]
            selector[LABEL_PREFIX + SWITCH_LABEL] = switch
    if len(qualifying) < profile.nodes:
        if profile.same_switch and qualifying:
            rejections[f"only {len(qualifying)} qualifying node(s) share a switch"] += 1
        return _infeasible(profile, len(nodes), rejections)
    ids = tuple(sorted(node.id for node in qualifying))
    selector[NODE_ID_LABEL] = f"in({','.join(ids)})"
    strategy = "STRICT_PACK" if profile.nodes == 1 else "STRICT_SPREAD"
    bundles = tuple(_bundle(profile) for _ in range(profile.nodes))
    selectors = tuple(dict(selector) for _ in range(profile.nodes))
    reason = f"{len(ids)} qualifying node(s); {strategy} over {profile.nodes} bundle(s)"
    return PlacementPlan(True, reason, strategy, bundles, selectors, ids)


def node_labels(
    node_id: str, facts_labels: dict[str, str], extra: dict[str, str]
) -> dict[str, str]:
    """The Ray labels an admitted node advertises (``rigwise.io/`` keys, safe values)."""
    merged = {**facts_labels, **extra}
    labels = {LABEL_PREFIX + key: label_value(value) for key, value in merged.items()}
    labels[NODE_ID_LABEL] = label_value(node_id)
    return labels
