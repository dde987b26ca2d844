"""The optimizer step of a training run, on the GPU or offloaded to the host (numpy arrays).

On the GPU the update is memory-bound: it streams the optimizer state, gradients and weights
once. ZeRO-Offload moves it to the host: gradients cross PCIe, CPU Adam streams the state
through host memory, and the updated weights come back (Ren et al. 2021).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from rigwise.catalog.loader import read_csv
from rigwise.estimate.compute import TrainingFactors
from rigwise.estimate.training_layout import Geometry, LayoutArrays, Workload
from rigwise.estimate.training_memory import (
    WEIGHT_BYTES,
    grad_bytes,
    lora_params,
    optimizer_bytes,
    stage_params,
)

if TYPE_CHECKING:
    from rigwise.estimate.training_comms import Fabric


def optimizer_time(geo: Geometry, work: Workload, lay: LayoutArrays, bw: float) -> Any:
    """Adam-style update streams master weights, moments, gradients and new weights once."""
    params, opt, g = _optimizer_state(geo, work, lay)
    # Adam reads and writes master weights and moments, reads gradients, writes working weights;
    # mixed precision also unscales/checks gradients for inf (r+w), takes the global gradient
    # norm for clipping (r) and zeroes them (w) (Micikevicius et al. 2018; Megatron optimizer).
    traffic = params * (2.0 * opt + g + WEIGHT_BYTES + 4.0 * g)
    return 0.0 if work.offload != "none" and work.trains_base else traffic / bw


def _optimizer_state(geo: Geometry, work: Workload, lay: LayoutArrays) -> tuple[Any, float, float]:
    """(parameters one GPU updates, optimizer bytes and gradient bytes per parameter)."""
    params = stage_params(geo, lay)
    opt = optimizer_bytes(work.optimizer, work.pure_bf16)
    g = grad_bytes(work.precision, work.pure_bf16)
    if not work.trains_base:
        params, opt = lora_params(geo, work) * params / geo.params_total, 12.0
    return np.where(lay.zero >= 1, params / (lay.dp * lay.cp), params), opt, g


def pcie_bytes_per_s(fabric: Fabric, f: TrainingFactors) -> float:
    """Host link of one GPU: its PCIe generation and lanes (gen 4 x16 where the catalog has
    none) at the NCCL-measured PCIe efficiency (pcie_generations.csv)."""
    acc = fabric.accelerator
    gen, lanes = acc.pcie_gen or 4, acc.pcie_lanes or 16
    rates = {int(r["gen"]): float(r["lane_gb_per_s"]) for r in read_csv("pcie_generations.csv")}
    return rates.get(gen, rates[4]) * 1e9 * lanes * f.bus_efficiency("pcie")


def offload_time(
    geo: Geometry, work: Workload, lay: LayoutArrays, fabric: Fabric, f: TrainingFactors, m: Any
) -> Any:
    """ZeRO-Offload / ZeRO-Infinity (Ren et al. 2021 Sec. 4; Rajbhandari et al. 2021): the
    gradients go to the host and the updated bf16 weights come back over PCIe, and CPU Adam,
    which is memory-bound, streams the fp32 state through the host memory the node's GPUs
    share. Parameter offload also brings every weight shard in for the forward and again for
    the backward of each microbatch."""
    if not work.trains_base:
        return 0.0 * m
    params, opt, g = _optimizer_state(geo, work, lay)
    pcie = pcie_bytes_per_s(fabric, f)
    if work.offload == "none":
        # A paged optimizer's state is paged in for the update and out again.
        return 2.0 * params * opt / pcie if work.paged_optimizer else 0.0 * m
    host = f.host_memory_bandwidth_bytes_per_s / max(fabric.gpus_per_node, 1)
    seconds = params * (g + WEIGHT_BYTES) / pcie + params * (2.0 * opt + g + WEIGHT_BYTES) / host
    if work.offload == "params":
        seconds = seconds + 2.0 * m * params * WEIGHT_BYTES / pcie
    return seconds
