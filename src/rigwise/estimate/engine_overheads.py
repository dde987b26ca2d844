"""What an inference engine keeps for itself on a device, and which class of device that is.

Engine reservations (CUDA context, vLLM's memory fraction, llama.cpp's compute buffer) and fixed
costs (per decode step, per request, per layer hop) come from ``catalog/data/engine_overheads.csv``,
matched per engine and ``device_class`` (the most specific row, by ``catalog.match``'s rule, as
``best_row`` finds it in any glob-keyed file); Apple's GPU wired-memory limit from
``apple_memory_limits.csv``. Nothing here hard-codes a spec.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from rigwise.catalog.loader import read_csv
from rigwise.catalog.match import most_specific
from rigwise.errors import CatalogError
from rigwise.hardware import Accelerator
from rigwise.units import GB, GiB

FP32_BYTES = 4  # the width of one logits entry unless the engine keeps them narrower


def device_class(accelerator: Accelerator) -> str:
    """``cpu`` or ``<vendor>-<memory family>``: nvidia-gddr, nvidia-hbm, apple-lpddr, amd-hbm."""
    return _device_class(accelerator.kind, accelerator.vendor, accelerator.memory_type)


@functools.lru_cache(maxsize=1024)
def _device_class(kind: str, vendor: str, memory_type: str) -> str:
    if kind == "cpu":
        return "cpu"
    memory = memory_type.lower()
    family = next((f for f in ("hbm", "gddr", "lpddr", "ddr") if f in memory), "other")
    return f"{vendor.lower()}-{family}"


@dataclass(frozen=True)
class EngineOverheads:
    """What an engine keeps for itself on a device (engine_overheads.csv)."""

    engine: str
    memory_fraction: float  # share of device memory the engine lets itself use
    fixed_overhead_bytes: float  # context, graphs, communication buffers
    workspace_tokens: int  # tokens per micro-batch the compute buffer is sized for
    max_concurrency: int  # the engine's default cap on concurrent sequences
    layer_hop_overhead_s: float  # per token, per device boundary in a layer split
    prefill_hop_overhead_s: float  # per pipelined batch, per device boundary in a layer split
    prefill_pipeline_tokens: int  # prompt tokens whose micro-batches pipeline over stages (0: none)
    tight_margin: float  # within this fraction of capacity the verdict is "tight"
    pipelined_serving: bool  # pipeline stages work on different micro-batches at once
    source: str
    step_overhead_s: float = 0.0  # per decode step: host scheduling, sampling, output handling
    request_overhead_s: float = 0.0  # per request, once: API server (HTTP, tokenise, stream)
    sequence_overhead_s: float = 0.0  # per step, per running sequence beyond the first: host work
    frontend_token_s: float = 0.0  # API-server CPU per streamed output token: caps a replica's rate
    logits_per_sequence: bool = False  # logits only at each sequence's last token (vLLM), not all
    logits_bytes: float = FP32_BYTES  # bytes per vocabulary entry of one logits row at the peak
    kv_grows: bool = False  # KV blocks allocated as a sequence grows (paged), not at admission


def best_row(file: str, **keys: str) -> dict[str, str]:
    """The most specific row of ``file`` whose glob columns match ``keys`` (in priority order;
    the rule is ``catalog.match``'s)."""
    row = most_specific(read_csv(file), **keys)
    if row is None:
        raise CatalogError(f"{file}: no row matches {keys}; add a '*' default row.")
    return row


@functools.cache
def engine_overheads(engine: str, klass: str) -> EngineOverheads:
    row = best_row("engine_overheads.csv", engine=engine, device_class=klass)
    return EngineOverheads(
        engine=engine,
        memory_fraction=float(row["memory_fraction"]),
        fixed_overhead_bytes=float(row["fixed_overhead_gb"]) * GB,
        workspace_tokens=int(row["workspace_tokens"]),
        max_concurrency=int(row["max_concurrency"]),
        layer_hop_overhead_s=float(row["layer_hop_overhead_us"]) * 1e-6,
        prefill_hop_overhead_s=float(row["prefill_hop_overhead_ms"]) * 1e-3,
        prefill_pipeline_tokens=int(row["prefill_pipeline_tokens"]),
        tight_margin=float(row["tight_margin"]),
        pipelined_serving=row["pipelined_serving"].lower() == "true",
        source=row["source"],
        step_overhead_s=float(row.get("step_overhead_us") or 0.0) * 1e-6,
        request_overhead_s=float(row.get("request_overhead_ms") or 0.0) * 1e-3,
        sequence_overhead_s=float(row.get("sequence_overhead_us") or 0.0) * 1e-6,
        frontend_token_s=float(row.get("frontend_token_us") or 0.0) * 1e-6,
        logits_per_sequence=row.get("logits_rows", "tokens") == "sequences",
        logits_bytes=float(row.get("logits_bytes") or FP32_BYTES),
        kv_grows=row.get("kv_reservation", "request") == "growing",
    )


@functools.cache
def apple_gpu_fraction(memory_bytes: float) -> float:
    """macOS's default GPU wired-memory limit as a share of RAM (recommendedMaxWorkingSetSize)."""
    try:
        rows = read_csv("apple_memory_limits.csv")
    except CatalogError:
        return 1.0  # data not packaged: no limit known, say so via the plan's notes
    gigabytes = round(memory_bytes / GiB, 3)  # the table is in Apple's marketed GB, i.e. GiB
    for row in rows:
        if float(row["min_memory_gb"]) <= gigabytes < float(row["max_memory_gb"]):
            return float(row["gpu_fraction"])
    return 1.0


def usable_memory_bytes(accelerator: Accelerator, overheads: EngineOverheads) -> float:
    """What the engine may fill on one device (Apple: the GPU wired limit applies too)."""
    capacity = accelerator.memory_bytes * overheads.memory_fraction
    if accelerator.vendor.lower() == "apple" and accelerator.kind != "cpu":
        capacity *= apple_gpu_fraction(accelerator.memory_bytes)
    return capacity
