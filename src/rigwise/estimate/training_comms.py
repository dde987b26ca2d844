"""The communication of a training step, for many layouts at once (numpy): the devices and
links one run uses (``Fabric``), and the collectives of context, expert, pipeline and data
parallelism with what of them stays exposed (tensor parallelism lives with the layer in
``training_step``)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from rigwise.estimate import comms
from rigwise.estimate.compute import TrainingFactors
from rigwise.estimate.identity_memo import IdentityMemo
from rigwise.estimate.power import PowerPoint, power_point
from rigwise.estimate.training_layout import Geometry, LayoutArrays, Workload
from rigwise.estimate.training_memory import WEIGHT_BYTES, grad_bytes, lora_params, stage_params
from rigwise.hardware import Accelerator, Link


@dataclass(frozen=True)
class Fabric:
    """The devices and links one run uses: GPUs per node, NVLink/PCIe inside, network across."""

    accelerator: Accelerator
    gpus_per_node: int
    intra_link: Link | None
    network: Link | None
    network_ports: int  # NICs per node; DGX/HGX-class nodes have one per GPU
    power_limit_watts: float | None = None  # a board power cap below TDP (nvidia-smi -pl)

    def clock_fraction(self, factors: TrainingFactors) -> float:
        """Compute throughput left under a power cap (``rigwise.estimate.power``)."""
        return self.power(factors).relative_throughput

    def power(self, factors: TrainingFactors) -> PowerPoint:
        """Speed kept and mean board power drawn at this fabric's power cap."""
        acc = self.accelerator
        return power_point(
            acc.id,
            acc.tdp_watts,
            self.power_limit_watts,
            exponent=factors.power_cap_exponent,
            utilisation=factors.power_utilisation,
        )

    def link_for(self, span: Any, factors: TrainingFactors) -> tuple[Link, Link]:
        """(inside-node, across-node) links scaled by NCCL bus efficiency and NIC sharing (the
        same for every span: made once per fabric and factors, a step asks for them per
        collective)."""
        return _LINKS.get((self, factors), None, lambda: self._scaled_links(factors))

    def _scaled_links(self, factors: TrainingFactors) -> tuple[Link, Link]:
        intra = self.intra_link or self.network or _null_link()
        net = self.network or intra
        intra_eff = dataclasses.replace(
            intra,
            bandwidth_bytes_per_s=intra.bandwidth_bytes_per_s * factors.bus_efficiency(intra.kind),
        )
        share = min(self.network_ports, self.gpus_per_node) / self.gpus_per_node
        net_eff = dataclasses.replace(
            net,
            bandwidth_bytes_per_s=net.bandwidth_bytes_per_s
            * factors.bus_efficiency(net.kind)
            * share,
        )
        return intra_eff, net_eff


_LINKS: IdentityMemo[tuple[Link, Link]] = IdentityMemo()


def _null_link() -> Link:
    return Link(id="none", name="none", kind="none", bandwidth_bytes_per_s=1.0, latency_s=0.0)


def collective(
    kind: str, size: Any, devices: Any, span: Any, fabric: Fabric, f: TrainingFactors
) -> Any:
    """Seconds of a collective over ``devices`` whose ranks spread over ``span`` GPUs.

    Across nodes a ring's links inside a node are NVLink; each ring crosses a node boundary
    once, and NCCL spreads its channels over the NICs of the group's GPUs on that node: a
    group with g GPUs per node gets g NICs' bandwidth for the crossing (one rank per node,
    e.g. DP beside TP 8, gets one; FSDP over whole nodes gets all of them). All-to-all has
    no such sharing: every GPU sends its own share over the network."""
    intra, net = fabric.link_for(span, f)
    op = getattr(comms, kind)
    inside = op(size, devices, intra).seconds
    if fabric.network or fabric.intra_link:
        cost = op(size, devices, net)
        stride = np.maximum(span / np.maximum(devices, 1), 1.0)
        per_node = np.clip(fabric.gpus_per_node / stride, 1.0, np.maximum(devices, 1))
        per_node = per_node if kind != "all_to_all" else 1.0
        across = cost.bandwidth_seconds / per_node + cost.latency_seconds
    else:
        across = inside
    time = np.where(span <= fabric.gpus_per_node, inside, across)
    return np.where(devices > 1, time, 0.0)


def context_parallel(
    geo: Geometry,
    lay: LayoutArrays,
    tokens: Any,
    attention_s: Any,
    fabric: Fabric,
    f: TrainingFactors,
) -> Any:
    """Ring attention passes K,V around the CP ring (and dK,dV back), hidden under attention."""
    kv_bytes = 2.0 * tokens * geo.kv_heads * geo.head_dim * 2.0 / lay.tp
    intra, net = fabric.link_for(lay.tp * lay.cp, f)
    per_step_in = comms.p2p(kv_bytes, intra).seconds
    per_step_net = comms.p2p(kv_bytes, net).seconds
    per_step = np.where(lay.tp * lay.cp <= fabric.gpus_per_node, per_step_in, per_step_net)
    comm = 3.0 * (lay.cp - 1) * per_step  # fwd ring + bwd ring with gradients (2x)
    return np.where(lay.cp > 1, np.maximum(comm - attention_s, 0.0), 0.0)


def expert_all_to_all(
    geo: Geometry, lay: LayoutArrays, tokens: Any, fabric: Fabric, f: TrainingFactors
) -> Any:
    """Dispatch + combine all-to-all, forward and backward (4 per MoE layer; Lepikhin 2020)."""
    if not geo.moe_layers:
        return 0.0 * tokens
    size = tokens * geo.experts_per_token * geo.hidden * 2.0 / lay.tp
    span = lay.tp * lay.cp * lay.ep
    a2a = collective("all_to_all", size, lay.ep, span, fabric, f)
    return 4.0 * a2a * geo.moe_layers / geo.layers


def pipeline_p2p(
    geo: Geometry, lay: LayoutArrays, tokens: Any, fabric: Fabric, f: TrainingFactors
) -> Any:
    """One activation send between stages; scatter/gather splits it over TP (Narayanan Sec. 4.1).

    Stages are the outermost rank dimension (Megatron order tp-cp-dp-pp), so a pipeline that
    spans more than one node has at least one stage boundary on the network; 1F1B runs in
    lockstep (every stage waits for its neighbours' sends), so that slowest hop sets the pace
    of every send, not only of the sends that cross.
    """
    size = tokens * geo.hidden * 2.0 / lay.tp
    intra, net = fabric.link_for(lay.tp * lay.cp * lay.dp * lay.pp, f)
    crosses = lay.tp * lay.cp * lay.dp * lay.pp > fabric.gpus_per_node
    return np.where(crosses, comms.p2p(size, net).seconds, comms.p2p(size, intra).seconds)


def data_parallel(
    geo: Geometry,
    work: Workload,
    lay: LayoutArrays,
    fabric: Fabric,
    f: TrainingFactors,
    bwd_last: Any,
    mb_time: Any,
    m: Any,
) -> tuple[Any, Any]:
    """(exposed DP gradient reduction, exposed ZeRO-3 gathers) per step."""
    params = stage_params(geo, lay)
    if not work.trains_base:
        params = lora_params(geo, work) * params / geo.params_total
    devices = lay.dp * lay.cp
    span = lay.tp * lay.cp * lay.dp
    g = grad_bytes(work.precision, work.pure_bf16)
    ar = collective("ring_all_reduce", params * g, devices, span, fabric, f)
    rs = collective("reduce_scatter", params * g, devices, span, fabric, f)
    ag = collective("all_gather", params * WEIGHT_BYTES, devices, span, fabric, f)
    # ZeRO-1/2 (Megatron distributed optimizer): reduce-scatter grads under the last backward,
    # then, after the optimizer step, all-gather the updated params: that gather cannot hide
    # under this step's backward, only under the next step's first forward (Megatron-Core
    # overlap_param_gather; about half of a backward's time: the forward has 1 of 3 GEMMs).
    hidden = bwd_last if work.overlap_grad_reduce else 0.0
    fwd_first = bwd_last / 2.0 if work.overlap_grad_reduce else 0.0
    sharded = np.maximum(rs - hidden, 0.0) + np.maximum(ag - fwd_first, 0.0)
    reduce = np.where(lay.zero >= 1, sharded, np.maximum(ar - hidden, 0.0))
    dp_exposed = np.where(lay.zero >= 3, 0.0, reduce)
    # FSDP/ZeRO-3: per microbatch gather params for fwd and bwd, reduce-scatter grads,
    # prefetched under compute (Zhao et al. 2023, PyTorch FSDP, Sec. 3.4).
    z3_mb = 2.0 * ag + rs
    z3 = np.maximum(z3_mb - (mb_time if work.overlap_grad_reduce else 0.0), 0.0) * m
    # With pipelining, FSDP keeps parameters and gradients unsharded across the microbatches
    # (torchtitan reshard_after_forward=False for PP): one gather and one reduce per step.
    z3_pp = np.maximum(ag + rs - (bwd_last if work.overlap_grad_reduce else 0.0), 0.0)
    z3 = np.where(lay.pp > 1, z3_pp, z3)
    return dp_exposed, np.where(lay.zero >= 3, z3, 0.0)
