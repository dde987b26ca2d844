"""What every training validation source shares: its data folder, the one reader of its rows
(``rows``: commented CSV with a ``role`` column, ``assumptions``: settings a row leaves out),
and the helpers that turn a published row into a prediction (``gpt_spec``, ``fabric``,
``published_layout``, ``predict``, ``case``). The sources (``training``, ``training_runs``,
``training_finetune``) import from here, never from each other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rigwise.catalog.loader import read_commented_csv
from rigwise.estimate.compute import training_factors
from rigwise.estimate.training import Evaluation, evaluate
from rigwise.estimate.training_layout import Layout, LayoutArrays, Workload, geometry
from rigwise.estimate.training_step import Fabric
from rigwise.units import GiB
from rigwise.validation.stats import NOT_MEASUREMENTS, Comparison, require_roles

GIB = GiB  # bytes per GiB, re-exported for the sources

DATA_DIR = Path(__file__).parent / "data" / "training"


def published_layout(row: Mapping[str, str], batch: int, **extra: Any) -> Layout:
    """The layout a published Megatron/Korthikanti row ran (columns of the reference CSVs)."""
    return Layout(
        tp=int(row["tensor_parallel"]),
        pp=int(row["pipeline_parallel"]),
        dp=int(row["data_parallel"]),
        vpp=int(row["pipeline_interleave_stages"] or 1),
        micro_batch=int(row["micro_batch_size"]),
        global_batch=batch,
        **extra,
    )


def case(
    source: str,
    label: str,
    metric: str,
    measured: float,
    predicted: float,
    role: str,
    fab: Fabric | None = None,
    gpus: int = 1,
    group: str = "",
) -> Comparison:
    """One published number next to rigwise's prediction (``stats.Comparison``); ``role`` is
    the row's ``role`` column (fit | independent | formula); ``fab`` and ``gpus`` place the row
    in its interval regime (formula rows have none)."""
    regime = ""
    if fab is not None and role != "formula":
        from rigwise.estimate.plan_intervals import training_regime

        kind = "train_memory" if metric == "memory_gib" else "train_throughput"
        regime = training_regime(kind, fab.accelerator.id, gpus).key()
    group = group or (fab.accelerator.id if fab is not None else "")
    return Comparison(
        source, metric, label, predicted, measured, role, regime=regime, group=group, devices=gpus
    )


# Which part of rigwise's memory per GPU each published memory statistic counts (the
# ``quantity`` / ``memory_quantity`` column of a memory row names it):
# - peak_allocated_gib, torch.cuda.max_memory_allocated: the tensors alone (weights,
#   gradients, optimizer state, activations);
# - peak_reserved_gib, torch.cuda.max_memory_reserved (memory_stats 'reserved_bytes.all.peak'):
#   what the caching allocator holds, the tensors and its slack, without the CUDA context and
#   NCCL's buffers, which are not allocated through it (TrainingFactors.outside_allocator_bytes);
# - peak_memory_gib, the device's own figure (nvidia-smi, NVML) or a counter the source does
#   not name: the total.
MEMORY_QUANTITIES = {
    "peak_allocated_gib": "tensors",
    "peak_reserved_gib": "reserved",
    "peak_memory_gib": "total",
}


def predicted_memory_gib(quantity: str, tensors: float, reserved: float, total: float) -> float:
    """rigwise's bytes per GPU that the row's statistic counts (``MEMORY_QUANTITIES``), in GiB."""
    if quantity not in MEMORY_QUANTITIES:
        raise ValueError(f"memory quantity {quantity!r}: use one of {sorted(MEMORY_QUANTITIES)}")
    part = MEMORY_QUANTITIES[quantity]
    chosen = tensors if part == "tensors" else reserved if part == "reserved" else total
    return chosen / GIB


def rows(directory: Path, name: str) -> list[dict[str, str]]:
    path = directory / name
    if not path.exists():
        return []
    found = [dict(row) for row in read_commented_csv(path)]
    if name not in NOT_MEASUREMENTS:
        require_roles(path, found)
    return found


def assumptions(directory: Path) -> dict[tuple[str, str], str]:
    found = rows(directory, "assumptions.csv") or rows(DATA_DIR, "assumptions.csv")
    return {(row["file"], row["field"]): row["value"] for row in found}


def gpt_spec(hidden: int, heads: int, layers: int, vocab: int, seq: int, name: str) -> Any:
    """A Megatron GPT (learned positions, tied embedding, GeLU MLP 4h, biases) from its shape."""
    from rigwise.models import ModelSpec

    per_layer = 12 * hidden * hidden + 13 * hidden
    total = layers * per_layer + vocab * hidden + seq * hidden + 2 * hidden
    return ModelSpec(
        name=name,
        architecture="gpt2",
        num_layers=layers,
        hidden_size=hidden,
        intermediate_size=4 * hidden,
        num_attention_heads=heads,
        num_kv_heads=heads,
        head_dim=hidden // heads,
        vocab_size=vocab,
        tie_word_embeddings=True,
        max_context=seq,
        params_total=total,
        params_active=total,
        params_embedding=vocab * hidden,
        params_positions=seq * hidden,
        gated_mlp=False,
    )


def fabric(
    device: str,
    per_node: int,
    network: str | None,
    ports: int,
    memory_gib: float | None = None,
    power_limit: float | None = None,
    memory_bandwidth_gb_s: float | None = None,
) -> Fabric:
    from rigwise.hardware import get_accelerator, get_link

    acc = get_accelerator(device)
    if memory_gib:
        acc = dataclasses.replace(acc, memory_bytes=memory_gib * GIB)
    if memory_bandwidth_gb_s:
        acc = dataclasses.replace(acc, memory_bandwidth_bytes_per_s=memory_bandwidth_gb_s * 1e9)
    switch = "nvswitch-gen2"  # A100 (DGX/HGX A100)
    if acc.id.startswith(("h100", "h200")):
        switch = "nvswitch-gen3"
    elif acc.id.startswith(("b200", "gb200")):
        switch = "nvswitch-gen4"
    intra = get_link(switch)
    return Fabric(acc, per_node, intra, get_link(network) if network else None, ports, power_limit)


def predict(spec: Any, work: Workload, layout: Layout, fab: Fabric) -> Evaluation:
    factors = training_factors(fab.accelerator.id)
    return evaluate(geometry(spec), work, LayoutArrays.from_layouts([layout]), fab, factors)
