"""Attach P10-P90 ranges to the JSON of inference and training plans.

Each value gets a sibling ``<name>_interval: [p10, p90]`` (``decode.tokens_per_s_interval``,
``step.seconds_interval``, ``memory.total_bytes_interval`` ...), and the plan an ``intervals``
entry saying which regime's independent rows set each range and where it was widened. The
ranges come from ``estimate/intervals.py`` (a table computed by ``rigwise validate intervals``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rigwise.estimate.intervals import (
    ANY,
    ON_RELOAD,
    WIDEN_UNSEEN,
    Interval,
    Regime,
    lookup,
    precision_class,
    scale_class,
)

ENGINE_FAMILY = {"ollama": "llama.cpp"}  # Ollama runs llama.cpp's kernels


def inference_regime(
    metric: str, engine: str, device_class: str, quant: str, devices: int
) -> Regime:
    return Regime(
        metric=metric,
        engine=ENGINE_FAMILY.get(engine, engine),
        device_class=device_class,
        precision=precision_class(quant),
        scale=scale_class(devices),
    )


def training_regime(metric: str, accelerator: str, devices: int, precision: str = "bf16") -> Regime:
    """``metric``: train_throughput (tokens/s, step time, TFLOP/s) or train_memory."""
    return Regime(
        metric=metric,
        engine="training",
        device_class=accelerator.split("-")[0],
        precision=precision_class(precision),
        scale=scale_class(devices),
    )


@functools.lru_cache(maxsize=256)
def _device_class_of(accelerator_id: str) -> str:
    from rigwise.errors import RigwiseError
    from rigwise.estimate.engine_overheads import device_class
    from rigwise.hardware import get_accelerator

    try:
        return device_class(get_accelerator(accelerator_id))
    except RigwiseError:  # a device built from a probe (--on this-machine), not a catalog row
        # this-machine is the CPU (probed, or measured by `rigwise bench`); GPUs keep their ids
        return "cpu" if accelerator_id == "this-machine" else "unknown"


def _set(section: dict[str, Any] | None, name: str, bound: Callable[[float], list[float]]) -> None:
    """``<name>_interval``: ``bound`` of the number ``section`` holds at ``name``, if it holds
    one (the JSON's part that ``--fields`` makes may hold only some of a section's keys)."""
    if section is not None and isinstance(value := section.get(name), (int, float)):
        section[f"{name}_interval"] = bound(value)


@functools.lru_cache(maxsize=256)
def _memory_interval(devices: int) -> Interval | None:
    """No inference memory was ever measured: the training peak-memory range, widened."""
    found = lookup(Regime("train_memory", "training", ANY, ANY, ANY), devices)
    if found is None:
        return None
    low, high = found.low_factor, found.high_factor
    return Interval(
        low_factor=low**WIDEN_UNSEEN,
        high_factor=high**WIDEN_UNSEEN,
        regime="memory (inference)",
        basis=found.basis,
        rows=found.rows,
        widened=True,
        notes=(
            "no measured inference memory: range from training peak-memory rows, "
            f"widened x{WIDEN_UNSEEN}",
        ),
    )


def _where(devices: Iterable[tuple[str, int]]) -> tuple[str, int] | None:
    """The device class and device count of a plan's (accelerator id, count) entries (None: no
    devices); one class for a plan on one kind, "mixed" otherwise."""
    classes, count, entries = set(), 0, 0
    for accelerator, number in devices:
        entries += 1
        count += int(number)
        if accelerator:
            classes.add(_device_class_of(accelerator))
    if not entries:
        return None
    return (classes.pop() if len(classes) == 1 else "mixed"), count


def _devices(data: dict[str, Any]) -> tuple[str, int] | None:
    """The device class and device count of an inference plan's JSON (None: no devices)."""
    per_device = (data.get("memory") or {}).get("per_device") or ()
    return _where((d.get("accelerator") or "", d.get("count", 1)) for d in per_device)


def plan_regime(plan: Any, metric: str) -> tuple[Regime, int] | None:
    """The regime of an ``InferencePlan``'s ``metric`` and its device count (None: no devices),
    read from the plan object (the JSON's ranges come from the same regimes)."""
    found = _where((d.accelerator_id, d.count) for d in plan.memory.per_device)
    if found is None:
        return None
    device_class, devices = found
    return inference_regime(metric, plan.engine, device_class, plan.quant, devices), devices


def phase_range(plan: Any, phase: str) -> list[float] | None:
    """The P10-P90 of a fitting ``InferencePlan``'s ``phase`` ("decode" or "prefill") tokens/s,
    as its JSON's ``<phase>.tokens_per_s_interval`` has it (the plan's own quant, engine and
    devices set the regime), without serialising the plan; None when it has none."""
    section = getattr(plan, phase) if plan.fits else None
    if section is None or not math.isfinite(section.tokens_per_s):
        return None
    found = plan_regime(plan, phase)
    interval = lookup(*found) if found is not None else None
    return interval.rate(section.tokens_per_s) if interval is not None else None


# The keys the functions below add (``json_fields`` names them to --fields): rates and times
# of each part, ranged by that part's regime; ``intervals.*``: an object of any keys; the
# devices of ``memory.per_device`` get theirs too.
_SERVING_RATES = ("aggregate_tokens_per_s", "per_user_tokens_per_s", "tokens_per_s_per_gpu")
_SERVING_TIMES = ("step_seconds", "tpot_s", "tpot_burst_s")
_SERVING_TTFTS = ("ttft_s", "ttft_wave_s", "ttft_burst_s")
_TRAIN_RATES = ("tokens_per_s", "model_tflops_per_gpu", "mfu", "hfu")
_TRAIN_TIMES = ("time_to_train_s", "gpu_hours", "energy_kwh", "cost_usd")
_INFERENCE_RANGED = (
    "decode.tokens_per_s", "decode.seconds_per_token", "prefill.tokens_per_s", "prefill.seconds",
    "ttft_s", "memory.total_bytes", "latency.ttft_s", "latency.seconds_per_token",
    "power.prefill_joules_per_token", "power.decode_joules_per_token",
    *(f"serving.{n}" for n in (*_SERVING_RATES, *_SERVING_TIMES, *_SERVING_TTFTS)),
)  # fmt: skip
# added key -> the keys it is made from (the regime: engine, quant, devices; the number it
# ranges); registered with the finish (serialize.register_json_finish) for --fields
_INFERENCE_SETUP = ("engine", "quant", "fits")
INFERENCE_INTERVAL_KEYS: dict[str, tuple[str, ...]] = {
    **{f"{name}_interval": (name, *_INFERENCE_SETUP) for name in _INFERENCE_RANGED},
    "intervals.*": _INFERENCE_SETUP,
    "memory.per_device": ("memory.per_device", *_INFERENCE_SETUP),
}
_TRAINING_SETUP = ("accelerator", "gpus", "fits")
TRAINING_INTERVAL_KEYS: dict[str, tuple[str, ...]] = {
    **{
        f"{name}_interval": (name, *_TRAINING_SETUP)
        for name in ("step.seconds", "memory_per_gpu.total_bytes", *_TRAIN_RATES, *_TRAIN_TIMES)
    },
    "intervals.*": _TRAINING_SETUP,
}


def add_inference_intervals(data: dict[str, Any]) -> dict[str, Any]:
    """``data``: ``InferencePlan.to_dict()``; adds the ``*_interval`` keys in place."""
    where = _devices(data) if data.get("fits") else None
    if where is None:
        return data
    batched = (data.get("workload") or {}).get("concurrency", 1) != 1
    return _inference_ranges(data, (data["engine"], *where, batched))


def add_inference_intervals_part(plan: Any, data: dict[str, Any]) -> dict[str, Any]:
    """``add_inference_intervals`` on part of an ``InferencePlan``'s JSON (its top-level
    scalars and some of its parts: ``--fields``): the devices and the concurrency that set the
    regimes are read from the plan object (the same values the whole JSON holds)."""
    where = None
    if data.get("fits"):
        where = _where((d.accelerator_id, d.count) for d in plan.memory.per_device)
    if where is None:
        return data
    return _inference_ranges(data, (data["engine"], *where, plan.workload.concurrency != 1))


def _inference_ranges(data: dict[str, Any], where: tuple[str, str, int, bool]) -> dict[str, Any]:
    """Adds the ranges of the parts ``data`` holds; ``where``: engine, device class, device
    count, batched."""
    engine, device_class, devices, batched = where
    setup = (engine, device_class, data["quant"], devices, batched)
    found = _ranges(*setup)
    if (r := found["decode"]) and data.get("decode"):
        _set(data["decode"], "tokens_per_s", r.rate)
        _set(data["decode"], "seconds_per_token", r.time)
    if (r := found["prefill"]) and data.get("prefill"):
        _set(data["prefill"], "tokens_per_s", r.rate)
        _set(data["prefill"], "seconds", r.time)
    serving = data.get("serving")
    if (r := found["serving"]) and serving:
        for name in _SERVING_RATES:
            _set(serving, name, r.rate)
        for name in _SERVING_TIMES:
            _set(serving, name, r.time)
    if (r := found["ttft"]) is not None:
        if data.get("ttft_s") is not None:
            data["ttft_s_interval"] = r.time(data["ttft_s"])
        for name in _SERVING_TTFTS:
            if serving:
                _set(serving, name, r.time)
    if (r := found["memory"]) and data.get("memory"):
        _set(data["memory"], "total_bytes", r.rate)
        for device in data["memory"].get("per_device") or []:
            _set(device, "total_bytes", r.rate)
    _latency_and_energy(data, found)
    # each plan its own copy: a caller may change its JSON
    data["intervals"] = {k: {**v, "notes": [*v["notes"]]} for k, v in _ranges_json(*setup)}
    return data


@functools.lru_cache(maxsize=1024)
def _ranges_json(
    engine: str, device_class: str, quant: str, devices: int, batched: bool
) -> tuple[tuple[str, dict[str, Any]], ...]:
    """The ``intervals`` entries of ``_ranges`` (read, never changed, by the caller): made once
    per setup, not once per plan."""
    found = _ranges(engine, device_class, quant, devices, batched)
    return tuple((k, v.to_dict()) for k, v in found.items() if v is not None)


@functools.lru_cache(maxsize=1024)  # --queries asks for the same few setups thousands of times
def _ranges(
    engine: str, device_class: str, quant: str, devices: int, batched: bool
) -> dict[str, Interval | None]:
    """The interval of each part of a plan's JSON (read, never changed, by the caller)."""

    def regime(metric: str) -> Interval | None:
        return lookup(inference_regime(metric, engine, device_class, quant, devices), devices)

    found: dict[str, Interval | None] = {"decode": regime("decode"), "prefill": regime("prefill")}
    found["ttft"] = _ttft(regime("ttft"), found["prefill"])
    found["serving"] = regime("serving") if batched else found["decode"]
    found["memory"] = _memory_interval(devices)
    return found


ON_RELOAD.extend((_ranges.cache_clear, _ranges_json.cache_clear, _memory_interval.cache_clear))


def _ttft(own: Interval | None, prefill: Interval | None) -> Interval | None:
    """TTFT's range: its own regime's where measured TTFTs exist for the plan's engine and
    device class (``validate intervals`` scores TTFT rows against that table), else the
    prefill range (TTFT at low load is mostly prefill; a TTFT range borrowed across engines
    would be another engine's queueing)."""
    return own if own is not None and not own.unseen else prefill


def _latency_and_energy(data: dict[str, Any], found: dict[str, Interval | None]) -> None:
    """The latency check's TTFT and time per token, and the joules per token of a power
    limit: a time (or energy = power x time) each, ranged like the phase it comes from. The
    board power itself has no measured rows to range it (the range is the phase's time only)."""
    latency, power = data.get("latency"), data.get("power")
    if latency and (r := found["ttft"]) is not None:
        _set(latency, "ttft_s", r.time)
    if (r := found["prefill"]) is not None and power:
        _set(power, "prefill_joules_per_token", r.time)
    if (r := found["decode"]) is not None:
        if latency:
            _set(latency, "seconds_per_token", r.time)
        if power:
            _set(power, "decode_joules_per_token", r.time)


def add_search_intervals(
    rows: Sequence[dict[str, Any]], engine: str, accelerator_ids: Sequence[str]
) -> list[dict[str, Any]]:
    """Rows of a serving-layout search (``infer --search``) with their ranges: tokens/s and
    TPOT from the (batched) serving regime, TTFT as plans range it, on each row's GPU count."""
    classes = {_device_class_of(a) for a in accelerator_ids}
    device_class = classes.pop() if len(classes) == 1 else "mixed"
    out = []
    for row in rows:
        row = dict(row)
        devices = int(row.get("gpus") or 1)
        quant = str(row.get("quant") or "")
        serving = lookup(inference_regime("serving", engine, device_class, quant, devices), devices)
        prefill = _ttft(
            lookup(inference_regime("ttft", engine, device_class, quant, devices), devices),
            lookup(inference_regime("prefill", engine, device_class, quant, devices), devices),
        )
        if serving is not None:
            for name in ("tokens_per_s_per_gpu", "tokens_per_s_per_user"):
                if row.get(name) is not None:
                    _set(row, name, serving.rate)
            if row.get("tpot_s") is not None:
                _set(row, "tpot_s", serving.time)
        if prefill is not None and row.get("ttft_s") is not None:
            _set(row, "ttft_s", prefill.time)
        out.append(row)
    return out


def add_training_intervals(data: dict[str, Any]) -> dict[str, Any]:
    """``data``: ``TrainingPlan.to_dict()``; adds the ``*_interval`` keys in place."""
    accelerator, devices = data.get("accelerator"), int(data.get("gpus") or 0)
    if not data.get("fits") or not accelerator or not devices:
        return data
    speed = lookup(training_regime("train_throughput", accelerator, devices), devices)
    memory = lookup(training_regime("train_memory", accelerator, devices), devices)
    if speed is not None:
        _set(data.get("step"), "seconds", speed.time)
        for name in _TRAIN_RATES:
            if data.get(name) is not None:
                data[f"{name}_interval"] = speed.rate(data[name])
        for name in _TRAIN_TIMES:
            if data.get(name) is not None:
                data[f"{name}_interval"] = speed.time(data[name])
    if memory is not None:
        _set(data.get("memory_per_gpu"), "total_bytes", memory.rate)
    data["intervals"] = {
        k: v.to_dict() for k, v in (("speed", speed), ("memory", memory)) if v is not None
    }
    return data


def add_training_intervals_part(plan: Any, data: dict[str, Any]) -> dict[str, Any]:
    """``add_training_intervals`` on part of a ``TrainingPlan``'s JSON (``--fields``): what
    sets its regimes (fits, accelerator, gpus) are top-level values, which a part holds."""
    return add_training_intervals(data)


# What api/infer.py and estimate/training.py register as their plans' JSON finish (whole, part,
# the keys added: serialize.register_json_finish).
INFERENCE_FINISH = (add_inference_intervals, add_inference_intervals_part, INFERENCE_INTERVAL_KEYS)
TRAINING_FINISH = (add_training_intervals, add_training_intervals_part, TRAINING_INTERVAL_KEYS)


def interval_text(
    bounds: list[float] | None,
    fmt: str | Callable[[float], str] = "{:,.1f}",
    value: float | None = None,
    time: bool = False,
) -> str:
    """`` (14.9-17.6)`` for text output; empty when there is no range. With the ``value`` it
    ranges, a range wholly on one side says so: `` (16.9-20.2: similar rigs ran faster)``
    (``time``: a range below a time is faster)."""
    if not bounds:
        return ""
    show = fmt.format if isinstance(fmt, str) else fmt
    side = ""
    if value is not None and (bounds[0] > value or bounds[1] < value):
        faster = (bounds[0] > value) != time
        side = f": similar rigs ran {'faster' if faster else 'slower'}"
    return f" ({show(bounds[0])}-{show(bounds[1])}{side})"
