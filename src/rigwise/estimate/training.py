"""Training and fine-tuning estimates: memory per GPU, step time, throughput, time, energy, cost.

``evaluate`` scores arrays of layouts (used by ``rigwise.search``); ``plan_from`` turns one
row into a ``TrainingPlan`` (rigwise.plans) with the documented JSON (docs/train.md).
MFU follows PaLM (Chowdhery et al. 2022, App. B): 6N + 12 L H Q T FLOPs per token, without
recompute; HFU counts what the hardware executes, recompute included.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from rigwise.estimate.compute import TrainingFactors
from rigwise.estimate.plan_intervals import TRAINING_FINISH
from rigwise.estimate.plausibility import plausibility_notes
from rigwise.estimate.training_layout import Geometry, LayoutArrays, Workload
from rigwise.estimate.training_memory import MemoryArrays, memory_per_gpu
from rigwise.estimate.training_step import STEP_PARTS, Fabric, StepArrays, estimate_step
from rigwise.plans import StepBreakdown, TrainingMemory, TrainingPlan
from rigwise.serialize import register_json_finish

# P10-P90 ranges beside the numbers in the plan's JSON: estimate/plan_intervals.py
register_json_finish(TrainingPlan, *TRAINING_FINISH)

MEMORY_KEYS = ("weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes")


@dataclass(frozen=True)
class Evaluation:
    """Scores of many layouts (arrays aligned with the ``LayoutArrays`` given). The derived
    arrays are computed at their first use and kept: ``plan_from`` reads one row of each per
    plan, and a batch of N plans from one evaluation would otherwise compute them N times."""

    layouts: LayoutArrays
    memory: MemoryArrays
    step: StepArrays
    capacity_bytes: float
    tokens_per_step: float | np.ndarray  # arrays for a ``per_row`` workload
    model_flops_per_token: float | np.ndarray
    peak_flops: float
    gpus: int

    @functools.cached_property
    def gpus_used(self) -> np.ndarray:
        """GPUs each layout occupies (a cost search may leave some idle)."""
        lay = self.layouts
        used: np.ndarray = (lay.tp * lay.pp * lay.dp * lay.cp).astype(float)
        return used

    @functools.cached_property
    def fits(self) -> np.ndarray:
        fits: np.ndarray = self.memory.total <= self.capacity_bytes
        return fits

    @functools.cached_property
    def tokens_per_s(self) -> np.ndarray:
        return self.tokens_per_step / self.step.seconds

    @functools.cached_property
    def model_flops_per_gpu(self) -> np.ndarray:
        per_gpu: np.ndarray = self.tokens_per_s * self.model_flops_per_token / self.gpus_used
        return per_gpu

    @functools.cached_property
    def mfu(self) -> np.ndarray:
        return self.model_flops_per_gpu / self.peak_flops

    @functools.cached_property
    def hfu(self) -> np.ndarray:
        per_token = self.model_flops_per_token + self.step.recompute_flops_per_token
        return self.mfu * per_token / self.model_flops_per_token


def model_flops_per_token(geo: Geometry, work: Workload) -> float:
    """PaLM's 6N + 12 L H Q T, N counting the output projection but not the input lookup."""
    n = geo.params_active - (0.0 if geo.tied else geo.embedding_params)
    attention = 12.0 * geo.layers * geo.heads * geo.head_dim * work.seq_len
    factor = 6.0 if work.trains_base else 4.0  # frozen base: no weight gradients
    return factor * n + attention


def _tokens_per_step(work: Workload) -> float | np.ndarray:
    """Tokens of one optimizer step (an array for a ``per_row`` workload)."""
    if isinstance(work.global_batch, np.ndarray):
        return np.asarray(work.global_batch * work.seq_len).astype(float)
    return float(work.global_batch * work.seq_len)


def evaluate(
    geo: Geometry, work: Workload, lay: LayoutArrays, fabric: Fabric, factors: TrainingFactors
) -> Evaluation:
    gpus = int((lay.tp * lay.pp * lay.dp * lay.cp).max()) if len(lay) else 0
    return Evaluation(
        layouts=lay,
        memory=memory_per_gpu(geo, work, lay, factors),
        step=estimate_step(geo, work, lay, fabric, factors),
        capacity_bytes=fabric.accelerator.memory_bytes,
        tokens_per_step=_tokens_per_step(work),
        model_flops_per_token=model_flops_per_token(geo, work),
        peak_flops=fabric.accelerator.peak_flops(work.precision),
        gpus=max(gpus, 1),
    )


def plan_from(
    ev: Evaluation,
    i: int,
    *,
    work: Workload,
    model: str,
    fabric: Fabric,
    factors: TrainingFactors,
    price: float | None,
    goodput: float | None = None,
) -> TrainingPlan:
    """The ``TrainingPlan`` of row ``i`` of an evaluation (``goodput`` None: the catalog's)."""
    mem = _memory_at(ev, i)
    step = StepBreakdown(
        parts={name: float(ev.step.parts[name][i]) for name in STEP_PARTS},
        microbatches=int(ev.step.microbatches[i]),
    )
    layout = ev.layouts.layout(i, work.global_batch)
    fits = bool(ev.fits[i])
    power = fabric.power(factors)
    if not fits:
        # A plan that does not fit never runs: no step time, throughput, time or cost.
        return TrainingPlan(
            fits=False,
            reason=_no_fit_reason(mem),
            model=model,
            accelerator=fabric.accelerator.id,
            gpus=layout.gpus,
            layout=layout,
            memory_per_gpu=mem,
            step=None,
        )
    tokens_per_s = float(ev.tokens_per_s[i])
    goodput = goodput if goodput is not None else factors.goodput
    totals = _totals(work, layout.gpus, tokens_per_s, power.drawn_watts, goodput, price)
    mfu = float(ev.mfu[i])
    return TrainingPlan(
        fits=True,
        reason="",
        model=model,
        accelerator=fabric.accelerator.id,
        gpus=layout.gpus,
        layout=layout,
        memory_per_gpu=mem,
        step=step,
        tokens_per_s=tokens_per_s,
        model_tflops_per_gpu=float(ev.model_flops_per_gpu[i]) / 1e12,
        mfu=mfu,
        hfu=float(ev.hfu[i]),
        price_usd_per_gpu_hour=price,
        time_to_train_s=totals[0],
        gpu_hours=totals[1],
        energy_kwh=totals[2],
        cost_usd=totals[3],
        goodput=goodput,
        power_watts_per_gpu=power.drawn_watts,
        notes=plausibility_notes(fabric.accelerator.id, work.precision, mfu),
    )


def _memory_at(ev: Evaluation, i: int) -> TrainingMemory:
    """The per-GPU memory of row ``i`` of an evaluation."""
    return TrainingMemory(
        weights_bytes=float(ev.memory.weights[i]),
        gradients_bytes=float(ev.memory.gradients[i]),
        optimizer_bytes=float(ev.memory.optimizer[i]),
        activations_bytes=float(ev.memory.activations[i]),
        other_bytes=float(ev.memory.other[i]),
        capacity_bytes=ev.capacity_bytes,
        outside_allocator_bytes=float(ev.memory.outside_allocator[i]),
    )


def _no_fit_reason(mem: TrainingMemory) -> str:
    gb = 1e9
    return (
        f"needs {mem.total_bytes / gb:.1f} GB per GPU but the device has "
        f"{mem.capacity_bytes / gb:.1f} GB (weights {mem.weights_bytes / gb:.1f}, optimizer "
        f"{mem.optimizer_bytes / gb:.1f}, activations {mem.activations_bytes / gb:.1f} GB); "
        "try more GPUs, --zero 3, --recompute full, a smaller --micro-batch or --search"
    )


def _totals(
    work: Workload,
    gpus: int,
    tokens_per_s: float,
    watts_per_gpu: float,
    goodput: float,
    price: float | None,
) -> tuple[float | None, float | None, float | None, float | None]:
    """(time to train, GPU-hours, energy kWh, cost USD) for the workload's tokens.

    The whole run takes the productive time over ``goodput`` (failures, restarts,
    checkpointing); the GPUs are paid and powered for all of it (lost work is redone at full
    power)."""
    if not work.tokens or tokens_per_s <= 0:
        return None, None, None, None
    seconds = work.tokens / tokens_per_s / goodput
    gpu_hours = seconds / 3600.0 * gpus
    cost = gpu_hours * price if price is not None else None
    return seconds, gpu_hours, gpu_hours * watts_per_gpu / 1000.0, cost
