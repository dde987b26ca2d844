"""Each device's memory in an inference plan, and moving weights to host RAM when they do not
fit: split from ``rigwise.api.infer_stages`` (the layout), whose stages these take.

``memory_of`` is kept per setup (``IdentityMemo``): a sweep's requests on one setup ask for the
memory of the same few KV-cache sizes (their context's, none, a running batch's).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from rigwise.api.infer_stages import overheads
from rigwise.errors import InputError
from rigwise.estimate.identity_memo import IdentityMemo
from rigwise.estimate.inference import Context
from rigwise.estimate.inference_memory import (
    MemoryBreakdown,
    offload_fraction,
    stage_memory,
    summarize,
)
from rigwise.estimate.inference_stages import Stage, can_offload
from rigwise.estimate.serving_layout import auto_offload
from rigwise.hardware import Cluster
from rigwise.models import ModelSpec
from rigwise.plans import DOES_NOT_FIT

if TYPE_CHECKING:
    from rigwise.api.infer_options import InferOptions

_MEMORY: IdentityMemo[MemoryBreakdown] = IdentityMemo()


def memory_of(
    spec: ModelSpec,
    stages: tuple[Stage, ...],
    ctx: Context,
    kv_bytes: float,
    engine: str,
) -> MemoryBreakdown:
    """Each device's memory with ``kv_bytes`` of KV cache (the whole model's), kept per (model,
    stages, context) objects and KV bytes: the requests of one setup (``--queries``) mostly
    ask for the same few (their context's cache, none, a running batch's)."""
    return _MEMORY.get(
        (spec, stages, ctx),
        (kv_bytes, engine),
        lambda: _memory(spec, stages, ctx, kv_bytes, engine),
    )


def _memory(
    spec: ModelSpec, stages: tuple[Stage, ...], ctx: Context, kv_bytes: float, engine: str
) -> MemoryBreakdown:
    devices = [
        stage_memory(
            spec,
            s,
            ctx.weights_bytes,
            kv_bytes,
            overheads(engine, s.accelerator),
            ctx.max_sequences,
        )
        for s in stages
    ]
    return summarize(devices, list(stages))


def with_host(stages: tuple[Stage, ...], host: str | None) -> tuple[Stage, ...]:
    """Give every stage the host CPU platform's RAM size and bandwidth (for offload)."""
    if host is None:
        return stages
    from rigwise.errors import UnknownNameError, closest
    from rigwise.hardware import accelerators, get_accelerator

    try:
        cpu = get_accelerator(host)
    except UnknownNameError:  # it said "Unknown GPU" and suggested GPUs, for a CPU option
        cpus = [a.id for a in accelerators() if a.kind == "cpu"]
        raise UnknownNameError("host CPU platform", host, closest(host, cpus)) from None
    if cpu.kind != "cpu":
        raise InputError(
            f"--host {host!r} is a {cpu.kind}, not a CPU platform.",
            hint="Name a CPU row, e.g. --host ryzen-9-7950x-ddr5-6000.",
        )
    return tuple(
        replace(
            s,
            host_memory_bytes=s.host_memory_bytes or cpu.memory_bytes,
            host_bandwidth_bytes_per_s=cpu.memory_bandwidth_bytes_per_s,
        )
        for s in stages
    )


def _with_default_host(
    stages: tuple[Stage, ...], engine: str, notes: list[str]
) -> tuple[Stage, ...]:
    """An engine that offloads to host RAM by itself (engine_defaults.csv ``auto_offload``)
    needs a host to be planned at all: the default desktop platform of workload_defaults.csv,
    said in a note, when the user named none."""
    from rigwise.api.mixed import default_host

    if any(can_offload(s) for s in stages) or all(
        s.accelerator.kind in ("cpu", "unified") for s in stages
    ):
        return stages
    host = default_host()
    notes.append(
        f"{engine} moves what does not fit to host RAM by itself: planned with the default "
        f"desktop host {host}; give --host for yours."
    )
    return with_host(stages, host)


def _with_offload(
    spec: ModelSpec, stages: tuple[Stage, ...], ctx: Context, kv_bytes: float, engine: str
) -> tuple[Stage, ...]:
    moved = []
    for s in stages:
        share = 0.0
        if can_offload(s):
            share = offload_fraction(
                spec,
                s,
                ctx.weights_bytes,
                kv_bytes,
                overheads(engine, s.accelerator),
                ctx.max_sequences,
            )
        moved.append(replace(s, offloaded_fraction=share))
    return tuple(moved)


def fitted_memory(
    opts: InferOptions,
    stages: tuple[Stage, ...],
    ctx: Context,
    kv_bytes: float,
    notes: list[str],
    idle_hinted: bool = False,
) -> tuple[tuple[Stage, ...], MemoryBreakdown]:
    """Memory per device; with offload (asked for, or the engine's default) and no fit,
    weights moved to host RAM. ``idle_hinted``: the setup's idle devices got a ``--dp`` hint,
    which offloaded weights void (more replicas would each offload as much: ``idle_notes``);
    the offload note then says the idle devices could hold them."""
    spec, engine = ctx.spec, ctx.engine
    memory = memory_of(spec, stages, ctx, kv_bytes, engine)
    offload = opts.offload or ("auto" if auto_offload(engine, stages) else "none")
    if memory.verdict == DOES_NOT_FIT and offload == "auto":
        if opts.offload is None and opts.host is None:  # the engine's own offload (Ollama)
            stages = _with_default_host(stages, engine, notes)
        stages = _with_offload(spec, stages, ctx, kv_bytes, engine)
        memory = memory_of(spec, stages, ctx, kv_bytes, engine)
        if memory.host_offload_bytes:
            notes.append(
                f"{memory.host_offload_bytes / 1e9:.1f} GB of weights offloaded to host RAM."
                + (" The idle devices could hold them (a longer --pp or wider --tp)." * idle_hinted)
            )
        elif not any(can_offload(s) for s in stages):
            notes.append("Offload needs --host CPU (the host's RAM size and bandwidth).")
    return stages, memory


def idle_notes(idle: tuple[IdleNote, ...], memory: MemoryBreakdown) -> list[str]:
    """The setup's idle-device notes for one plan: each with its ``--dp`` hint unless the plan
    offloads weights to host RAM (each replica would offload as much again)."""
    offloaded = memory.host_offload_bytes > 0
    return [n.text + ("" if offloaded else n.dp_hint) for n in idle]


@dataclass(frozen=True)
class IdleNote:
    """Devices a layout leaves idle (``text``) and the ``--dp N`` that would use them
    (``dp_hint``, '' for none): a setup's, shown with each of its plans."""

    text: str
    dp_hint: str = ""


def idle_devices(
    opts: InferOptions,
    cluster: Cluster,
    stages: tuple[Stage, ...],
    layers: int,
    layout_note: str | None,
) -> list[IdleNote]:
    """A note when the layout leaves devices idle: a pipeline too short for them (at most one
    stage per layer), or a --tp / --pp / --dp given that uses fewer than the rig has (the note
    that --dp alone makes already says so)."""
    per_replica = sum(s.tp for s in stages)
    used, total = per_replica * opts.dp, cluster.accelerator_count
    if used >= total or opts.disagg is not None or (layout_note and "idle" in layout_note):
        return []
    if len(stages) == layers and opts.dp == 1:
        return [
            IdleNote(
                f"Only {used:,} of the {total:,} devices hold layers "
                f"({layers} layers, one pipeline stage per layer at most); the rest idle."
            )
        ]
    shape = f"tp {max(s.tp for s in stages)} x pp {len(stages)}"
    shape += f" x {opts.dp} replicas" if opts.dp > 1 else ""
    note = f"{shape} uses {used:,} of the {total:,} devices; {total - used:,} idle."
    one_kind = len({node.accelerator.id for node, _ in cluster.runs}) == 1
    if one_kind and total // per_replica > opts.dp:
        hint = f" --dp {total // per_replica} would run a replica on each {per_replica:,}."
        return [IdleNote(note, hint)]
    return [IdleNote(note)]
