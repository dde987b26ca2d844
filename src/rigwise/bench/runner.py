"""Run the bench: pick devices from a probe, run each group with a progress bar, derive the
efficiency factors, store the run (calibration) and return a ``BenchReport``."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from rigwise.bench import calibration as store
from rigwise.bench import expectations as expect
from rigwise.bench import tasks
from rigwise.bench.result import BenchReport, MeasuredPlatformJson, Measurement, Skipped
from rigwise.bench.screen import screen
from rigwise.bench.tasks import Device, Outcome
from rigwise.errors import InputError, ProbeError
from rigwise.probe import FakeBackend, HardwareBackend, default_backend, probe
from rigwise.probe.report import GpuInfo, ProbeReport
from rigwise.units import GiB

GROUPS = ("matmul", "memory", "transfer", "disk", "llm", "finetune", "external")

Step = tuple[str, str, Callable[[], Outcome]]  # (group, label, run)


def _check_groups(only: Iterable[str] | None) -> tuple[str, ...]:
    chosen = tuple(only) if only else GROUPS
    unknown = [g for g in chosen if g not in GROUPS]
    if unknown:
        raise InputError(
            f"Unknown bench group(s) {', '.join(map(repr, unknown))}.",
            hint=f"Choose from: {', '.join(GROUPS)}.",
        )
    return chosen


def _may_have_cuda(report: ProbeReport) -> bool:
    """Importing torch takes seconds, so ask it about CUDA only where a driver is present."""
    return any(g.vendor == "nvidia" for g in report.gpus) or Path("/proc/driver/nvidia").exists()


def _pci_key(bus_id: str) -> tuple[int, int, int] | None:
    """(domain, bus, device) of an NVML bus id such as '00000000:3B:00.0'."""
    try:
        domain, bus, rest = bus_id.split(":")
        return int(domain, 16), int(bus, 16), int(rest.split(".")[0], 16)
    except ValueError:
        return None


def _gpu_device(
    name: str, label: str, info: GpuInfo | None, fingerprint: str, measured: dict[str, float]
) -> Device:
    accelerator = expect.find_accelerator(info.name if info else label)
    acc_id = getattr(accelerator, "id", None) or (info.name if info else label)
    calibration = store.load_calibration(acc_id, fingerprint)
    return Device(name, accelerator, acc_id, calibration, info, measured)


def _devices(
    report: ProbeReport, backend: HardwareBackend, fingerprint: str
) -> tuple[Device, list[Device]]:
    cpu_acc = expect.cpu_accelerator(report.cpu.model)
    cpu_id = getattr(cpu_acc, "id", "cpu")
    cpu = Device("cpu", cpu_acc, cpu_id, store.load_calibration(cpu_id, fingerprint))
    if isinstance(backend, FakeBackend):
        return cpu, [
            _gpu_device(f"fake:{g.index}", g.name, g, fingerprint, backend.measured(g.index))
            for g in report.gpus
        ]
    if not _may_have_cuda(report):
        return cpu, []
    from rigwise.bench import torch_adapter

    # CUDA may number GPUs differently from NVML (and CUDA_VISIBLE_DEVICES hides some), so
    # each CUDA device is paired with the probed GPU on the same PCI address.
    by_address = {_pci_key(g.pci_bus_id): g for g in report.gpus}
    gpus = []
    for name, label, address in torch_adapter.cuda_device_addresses():
        info = by_address.get(address)
        gpus.append(_gpu_device(name, label, info, fingerprint, {}))
    return cpu, gpus


def _steps(
    chosen: Sequence[str],
    quick: bool,
    cpu: Device,
    gpus: list[Device],
    fake: bool,
    model: str | None,
    disk_dir: str | None,
) -> list[Step]:
    from rigwise.bench import external, llm

    steps: list[Step] = []
    if fake:
        # A described machine: its GPUs report the figures the description claims, and this
        # host's CPU, disk and torch are not the described machine's, so nothing else runs.
        return [
            ("fake", f"{g.name} (described)", partial(tasks.fake_measurements, g)) for g in gpus
        ]
    real_gpus = gpus
    if "matmul" in chosen:
        steps.append(("matmul", "CPU matmul", lambda: tasks.cpu_matmul(cpu, quick)))
        steps += [
            ("matmul", f"{g.name} matmul", partial(tasks.gpu_matmul, g, quick)) for g in real_gpus
        ]
    if "memory" in chosen:
        steps.append(("memory", "CPU memory triad", lambda: tasks.cpu_memory(cpu, quick)))
        steps += [
            ("memory", f"{g.name} copy", partial(tasks.gpu_memory, g, quick)) for g in real_gpus
        ]
    if "transfer" in chosen and real_gpus:
        steps.append(
            ("transfer", "host<->GPU, GPU<->GPU", lambda: tasks.gpu_transfers(real_gpus, quick))
        )
    if "disk" in chosen:
        steps.append(("disk", "disk sequential", lambda: tasks.disk(disk_dir, quick)))
    if "llm" in chosen:
        finetune = "finetune" in chosen
        targets = real_gpus[:1] or [cpu]
        steps += [
            ("llm", f"{d.name} Llama", partial(llm.run, d, quick, model, finetune)) for d in targets
        ]
    if "external" in chosen:
        steps.append(
            ("external", "llama-bench", lambda: _external(external.run_llama_bench, "llama_bench"))
        )
        steps.append(("external", "Ollama", lambda: _external(external.query_ollama, "ollama")))
    return steps


def _external(call: Callable[[], tuple[list[Measurement], str | None]], name: str) -> Outcome:
    found, why = call()
    outcome = Outcome(found)
    if why:
        outcome.skip(name, why)
    return outcome


def derive_factors(
    measurements: Sequence[Measurement], devices: Sequence[Device]
) -> dict[str, dict[str, float]]:
    """accelerator id -> calibration key -> measured factor, for devices with a catalog peak."""
    by_name = {d.name: d for d in devices}
    factors: dict[str, dict[str, float]] = {}
    for m in measurements:
        device = by_name.get(m.device)
        if device is None:
            continue
        found = factors.setdefault(device.accelerator_id, {})
        fraction = m.fraction_of_peak
        if m.name.startswith("matmul_") and fraction:
            found[f"matmul_efficiency_{m.name[7:]}"] = fraction
        elif m.name in ("device_copy", "memory_triad") and fraction:
            found["memory_bandwidth_efficiency"] = fraction
        elif m.name in ("llm_decode", "llm_prefill") and m.details.get("fitted_efficiency"):
            key = (
                "decode_bandwidth_efficiency"
                if m.name == "llm_decode"
                else "prefill_compute_efficiency"
            )
            found[key] = float(m.details["fitted_efficiency"])
    return {acc: values for acc, values in factors.items() if values}


def measured_platform_of(
    report: ProbeReport, cpu: Device, measurements: Sequence[Measurement]
) -> MeasuredPlatformJson | None:
    """The measured CPU platform, stored when the catalog match is poor (bench/measured.py)."""
    from rigwise.bench import measured

    reason = measured.poor_match(cpu.accelerator_id if cpu.accelerator else None, measurements)
    if reason is None:
        return None
    c = report.cpu
    figures = measured.measured_figures(
        measurements, c.model, c.cores, c.threads, report.memory.total_bytes
    )
    return {"reason": reason, "figures": figures} if figures else None


def platform_line(
    report: ProbeReport,
    cpu: Device,
    gpus: Sequence[Device],
    measured_platform: MeasuredPlatformJson | None = None,
) -> str:
    """How the machine was identified: the catalog rows its figures are fractions of."""
    memory_gib = report.memory.total_bytes / GiB
    what = f"{report.cpu.model!r} ({report.cpu.threads} threads, {memory_gib:.0f} GiB)"
    if measured_platform is not None:
        bandwidth = measured_platform["figures"]["memory_bandwidth_bytes_per_s"] / 1e9
        line = (
            f"CPU {what}: {measured_platform['reason']}; stored as the measured platform "
            f"'this-machine' ({bandwidth:.1f} GB/s memory bandwidth, matmul as measured); "
            "no CPU efficiency is derived from the catalog row"
        )
    elif cpu.accelerator is None:
        line = (
            f"CPU {what}: no catalog platform matches, so its figures are reported as measured "
            "and no CPU efficiency is derived (plans for this CPU use the --on you give)"
        )
    else:
        line = (
            f"CPU {what}: catalog platform {cpu.accelerator_id}; an efficiency outside "
            "(0.05, 1] means the match is wrong and is not stored"
        )
    matched = [f"{g.name}={g.accelerator_id}" for g in gpus if g.accelerator is not None]
    return line + (f"; GPUs: {', '.join(matched)}" if matched else "")


def _progress(enabled: bool) -> Any:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
        disable=not enabled,
    )


def run_bench(
    quick: bool = False,
    only: Iterable[str] | None = None,
    *,
    backend: HardwareBackend | None = None,
    model: str | None = None,
    disk_dir: str | None = None,
    progress: bool = False,
    save: bool = True,
) -> BenchReport:
    """Measure this machine (or the fake one). ``only`` picks groups from ``GROUPS``;
    ``run_bench(quick=True, only=["matmul", "memory"])`` takes a few seconds on a CPU."""
    chosen = _check_groups(only)
    backend = backend or default_backend()
    report = probe(backend)
    fingerprint = store.fingerprint(report)
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    begin = time.perf_counter()
    cpu, gpus = _devices(report, backend, fingerprint)
    fake = isinstance(backend, FakeBackend)
    steps = _steps(chosen, quick, cpu, gpus, fake, model, disk_dir)
    measurements: list[Measurement] = []
    skipped: list[Skipped] = []
    with _progress(progress) as bar:
        task = bar.add_task("bench", total=len(steps))
        for _group, label, step in steps:
            bar.update(task, description=label)
            try:
                outcome = step()
            except (RuntimeError, OSError, MemoryError) as exc:
                # CUDA out-of-memory and driver errors are RuntimeErrors; a full disk is an
                # OSError. One failing group must not lose the others' measurements.
                outcome = Outcome(skipped=[Skipped(label, f"failed: {exc}")])
            except ProbeError as exc:  # a missing optional package (torch): say how to add it
                outcome = Outcome(skipped=[Skipped(label, str(exc))])
            measurements += outcome.measurements
            skipped += outcome.skipped
            bar.advance(task)
    factors, refused, references = screen(derive_factors(measurements, [cpu, *gpus]), quick)
    platform = measured_platform_of(report, cpu, measurements)
    result = BenchReport(
        fingerprint,
        started_at,
        quick,
        time.perf_counter() - begin,
        tuple(measurements),
        tuple(skipped + refused),
        factors,
        platform=platform_line(report, cpu, gpus, platform),
        references=tuple(references),
        measured_platform=platform,
    )
    if save:
        run_id = store.save_run(fingerprint, started_at, quick, result.to_dict(), factors)
        result = BenchReport(**{**result.__dict__, "run_id": run_id})
    return result
