"""`rigwise infer MODEL --on HW`: will it run, and how fast? (a thin layer over plan_inference)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import click

from rigwise.cli._common import (
    EXIT_BAD_INPUT,
    apply_rig,
    fail,
    finish,
    ranged_rate,
    ranged_seconds,
    rig_option,
)
from rigwise.cli.fields import fields_of, fields_option, plan_without_levers
from rigwise.cli.plain import Report, Table
from rigwise.cli.queries import run_queries as shared_run_queries

if TYPE_CHECKING:
    from rigwise.json_fields import Selection


def _options(**kwargs: Any) -> dict[str, Any]:
    """CLI values -> plan_inference keyword arguments (None means: use the default)."""
    return {key: value for key, value in kwargs.items() if value is not None}


def _this_machine_calibration() -> tuple[dict[str, float], str, str | None]:
    """``--on this-machine --calibrated``: the measured platform or the probed device's factors,
    whichever the newest bench run stored (bench/measured.py); says which run, how old."""
    from rigwise.api.machine import this_machine
    from rigwise.bench.measured import this_machine_calibration
    from rigwise.estimate.inference_efficiency import CALIBRATION_KEYS

    device = this_machine().cluster.nodes[0].accelerator
    found = this_machine_calibration(device.id)
    if found is None:
        fail("No calibration or measured platform is stored for this machine. Run "
             "`rigwise bench --quick` on it first.")  # fmt: skip
    return {k: v for k, v in found.factors.items() if k in CALIBRATION_KEYS}, found.on, found.said


def _calibration(on: str | None) -> tuple[dict[str, float], str, str | None]:
    """Measured factors stored by `rigwise bench` for the device in --on, the --on to plan on
    (this machine's measured platform replaces a catalog row that does not stand for it), and
    which stored measurement that is and how old (a note on the plan, in text and JSON)."""
    from rigwise.bench import calibration
    from rigwise.hardware import parse_node

    if not on:
        fail("--calibrated needs --on naming the device that was benchmarked.")
    if on in ("this-machine", "this-machine-measured"):
        return _this_machine_calibration()
    accelerator = parse_node(on).nodes[0].accelerator
    found = calibration.load_calibration(accelerator.id)
    if not found:
        from rigwise.bench.measured import latest_measured_platform

        measured = latest_measured_platform()
        extra = f" This machine's bench stored a {measured.describe()}." if measured else ""
        fail(
            f"No calibration stored for {accelerator.id}. Run `rigwise bench` on that machine."
            + extra
        )
    source = calibration.calibration_source(accelerator.id)
    said = None if source is None else source.describe()  # which measurement, how old
    from rigwise.estimate.inference_efficiency import CALIBRATION_KEYS

    return {k: float(v) for k, v in found.items() if k in CALIBRATION_KEYS}, on, said


def run_queries(path: str, fields: Selection | None = None) -> int:
    """One plan per JSON line of ``path`` ('-' for stdin); one JSON result per line, in order
    (with ``fields``, only those paths of it)."""
    from rigwise.api.infer import plan_inference

    plan: Any = plan_inference
    if fields is not None and not fields.wants("levers"):
        plan = plan_without_levers(plan_inference)
    return shared_run_queries(path, plan, fields=fields)


@click.command("infer")
@click.argument("model", required=False)
@click.option("--on", "on", help="One node: 'rtx-4090', '2x rtx-3090+nvlink', 'dgx-h100', a CPU.")
@click.option("--nodes", type=int, help="Number of such nodes (with --network).")
@click.option("--network", help="Link between nodes: 10gbe, ib-ndr, thunderbolt-4, ...")
@click.option("--cluster", "cluster", type=click.Path(), help="Heterogeneous cluster YAML file.")
@rig_option
@click.option("--quant", help="Weights: Q4_K_M, Q8_0, F16, BF16, FP8, AWQ-4bit-g128, NF4, MXFP4...")
@click.option("--kv-quant", help="KV cache dtype: f16, bf16, fp8, q8_0, q4_0, q4_1, q5_0, f32.")
@click.option("--prompt", help="Prompt tokens (default 512), or 'max': the longest that fits.")
@click.option("--gen", help="Generated tokens (default 128).")
@click.option(
    "--context", help="Context to reserve (default prompt + gen), or 'max': the largest that fits."
)
@click.option("--concurrency", help="Concurrent requests, or 'max' (default 1).")
@click.option("--engine", help="llama.cpp, vllm, sglang, tensorrt-llm, transformers, mlx, ollama.")
@click.option("--offload", type=click.Choice(["auto", "none"]), help="CPU offload of weights.")
@click.option("--host", help="Host CPU platform for --offload auto (e.g. ryzen-9-7950x-ddr5-6000).")
@click.option("--split", type=click.Choice(["layer", "tensor"]), help="How devices share it.")
@click.option("--tp", type=int, help="Tensor-parallel size.")
@click.option("--pp", type=int, help="Pipeline stages.")
@click.option("--dp", type=int, help="Replicas of the tp x pp layout (data parallel serving).")
@click.option("--ep", type=int, help="Expert-parallel ranks inside --tp (MoE models).")
@click.option("--attention-dp", type=int, help="Attention data-parallel ranks inside --tp.")
@click.option("--max-batch", type=int, help="Running sequences per replica (engine default).")
@click.option(
    "--disagg",
    help='Disaggregated prefill/decode as JSON: \'{"prefill": {"tp": 8, "workers": 1}, '
    '"decode": {"tp": 8, "workers": 1}}\' (keys tp, pp, ep, attention_dp, workers, max_batch).',
)
@click.option("--latency-budget", help="Per-token / first-token budget, e.g. 200ms.")
@click.option(
    "--power-limit",
    type=click.FloatRange(min=0, min_open=True),
    help="Board power cap per device in watts (nvidia-smi -pl): speed kept and J/token.",
)
@click.option("--engine-build", help="Date of an older engine build (YYYY-MM): its kernels.")
@click.option("--calibrated", is_flag=True, help="Use factors measured by `rigwise bench`.")
@click.option("--no-levers", is_flag=True, help="Skip the levers (faster).")
@click.option(
    "--no-api-server",
    is_flag=True,
    help="The engine runs in-process (vLLM's offline LLM): no API server caps the rate.",
)
@click.option("--queries", type=click.Path(allow_dash=True), help="JSONL file of plans to run.")
@click.option("--search", is_flag=True, help="Search serving layouts (agg and disagg) instead.")
@click.option("--slo-ttft", help="With --search: time-to-first-token limit, e.g. 1s.")
@click.option("--slo-tpot", help="With --search: time-per-output-token limit, e.g. 40ms.")
@click.option("--gpus", type=int, help="With --search: devices of the cluster to use (all).")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@fields_option()
def infer(
    model: str | None,
    calibrated: bool,
    no_levers: bool,
    no_api_server: bool,
    queries: str | None,
    as_json: bool,
    fields: str | None,
    **kwargs: Any,
) -> int:
    """Will MODEL run on the hardware, and how fast? Exit 1 when it does not fit."""
    from rigwise.api.infer import InferencePlan  # (with its JSON's finish registered)

    if kwargs.get("search") and fields is not None:  # before the paths are read as a plan's
        fail("--fields picks from one plan's JSON: not with --search.")
    selected = fields_of(fields, InferencePlan, "infer", as_json=as_json, queries=bool(queries))
    if queries:
        return run_queries(queries, selected)
    if not model:
        fail("Give a MODEL (name, config.json or .gguf), or --queries FILE.jsonl.")
    from rigwise.api.infer import plan_inference

    if kwargs.get("disagg"):
        from rigwise.validate_input import load_json

        kwargs["disagg"] = load_json(kwargs["disagg"], "--disagg")  # nesting bounded
    search = kwargs.pop("search")
    options = _options(model=model, **apply_rig(kwargs))
    if search and no_api_server:
        fail("--no-api-server plans one layout: not with --search.")
    if search:
        from rigwise.cli.infer_search import run_search

        if calibrated:  # refused with the options the search does not take, not ignored
            options["calibrated"] = True
        return run_search(options, as_json)
    for flag in ("slo_ttft", "slo_tpot", "gpus"):
        if flag in options:
            fail(f"--{flag.replace('_', '-')} needs --search.")
    said = None
    if calibrated:
        options["calibration"], options["on"], said = _calibration(options.get("on"))
    if no_levers or (selected is not None and not selected.wants("levers")):
        options["levers"] = False  # levers fill only the plan's `levers`
    if no_api_server:
        options["api_server"] = False
    plan = plan_inference(**options)
    if said is not None:
        plan = replace(plan, notes=(f"--calibrated: {said}", *plan.notes))
    return finish(plan, as_json, render, selected)


def _rate(value: float | None, section: dict[str, Any] | None = None, name: str = "") -> str:
    """``16.4 tok/s (14.9-17.6)``: the value and, when the plan has one, its P10-P90 range."""
    if value is None:
        return "-"
    return ranged_rate(value, (section or {}).get(f"{name}_interval"))


def _latency_line(latency: Any) -> str:
    from rigwise.units import format_seconds

    def verdict(ok: bool) -> str:
        return "[green]met[/]" if ok else "[red]missed[/]"

    return (
        f"latency budget {format_seconds(latency.budget_s)}: first token "
        f"{format_seconds(latency.ttft_s)} ({verdict(latency.ttft_meets_budget)}), "
        f"per token {format_seconds(latency.seconds_per_token)} "
        f"({verdict(latency.token_meets_budget)})"
    )


def render(plan: Any) -> None:
    """The plan as a short report: verdict, memory, speeds, serving, levers."""
    from rigwise.units import format_bytes

    out = Report()  # plain text without rich where rich would write it plain
    colour = {"fits": "green", "tight": "yellow"}.get(plan.verdict, "red")
    out.print(
        f"[bold]{plan.model}[/] on {plan.hardware} ({plan.engine}, {plan.quant}, "
        f"KV {plan.kv_quant}): [{colour}]{plan.verdict}[/]"
    )
    if plan.reason:
        out.print(f"  {plan.reason}")
    out.print(_memory_table(plan))
    from rigwise.serialize import to_jsonable

    data = to_jsonable(plan) if plan.prefill and plan.decode else {}
    if plan.prefill and plan.decode:
        out.print(
            f"prefill {_rate(plan.prefill.tokens_per_s, data['prefill'], 'tokens_per_s')} "
            f"({plan.prefill.bound}); time to first token "
            f"{ranged_seconds(plan.prefill.seconds, data.get('ttft_s_interval'))}"
        )
        out.print(
            f"decode  {_rate(plan.decode.tokens_per_s, data['decode'], 'tokens_per_s')} "
            f"({plan.decode.bound})"
        )
    _print_serving(out, plan, data)
    if plan.latency:
        out.print(_latency_line(plan.latency))
    bounds = (data.get("memory") or {}).get("total_bytes_interval")
    if bounds:
        out.print(
            f"memory {format_bytes(plan.memory.total_bytes)} "
            f"({format_bytes(bounds[0])}-{format_bytes(bounds[1])})"
        )
    _print_ranges(out, data.get("intervals"))
    if plan.power:
        p = plan.power
        out.print(
            f"at {p['limit_watts']:.0f} W: {p['drawn_watts']:.0f} W drawn, compute "
            f"{p['compute_relative_throughput']:.0%} of stock, "
            f"{p['decode_joules_per_token']:.2f} J/token decode"
        )
    for note in plan.notes:
        out.print(f"note: {note}")
    for lever in plan.levers:
        out.print(f"lever: {lever.description}")
    out.show()


def _memory_table(plan: Any) -> Table:
    from rigwise.units import format_bytes

    table = Table("device", "weights", "KV cache", "workspace", "overhead", "total", "usable")
    for d in plan.memory.per_device:
        cells = (d.weights_bytes, d.kv_cache_bytes, d.activations_bytes, d.overhead_bytes)
        table.add_row(
            d.device, *(format_bytes(c) for c in cells), format_bytes(d.total_bytes),
            format_bytes(d.capacity_bytes),
        )  # fmt: skip
    return table


def _print_serving(out: Report, plan: Any, data: dict[str, Any]) -> None:
    """The running batch and its queue, when more than one request or replica is served."""
    if not (plan.serving and (plan.serving.concurrency > 1 or plan.serving.replicas > 1)):
        return
    s, ds = plan.serving, data.get("serving")
    ranged = (ds or {}).get
    out.print(
        f"serving {s.concurrency} requests: {s.running_batch} running per replica "
        f"(x{s.replicas}), {s.queued} queued; "
        f"{_rate(s.aggregate_tokens_per_s, ds, 'aggregate_tokens_per_s')} in total, "
        f"{_rate(s.tokens_per_s_per_gpu, ds, 'tokens_per_s_per_gpu')} per GPU, "
        f"{_rate(s.per_user_tokens_per_s, ds, 'per_user_tokens_per_s')} per user; "
        f"TTFT {ranged_seconds(s.ttft_s, ranged('ttft_s_interval'))}, "
        f"TPOT {ranged_seconds(s.tpot_s, ranged('tpot_s_interval'))}"
    )
    if s.reason:
        out.print(f"  {s.reason}")


def _print_ranges(out: Report, intervals: dict[str, Any] | None) -> None:
    if not intervals:
        return
    out.print(
        "ranges: P10-P90 of what comparable independent measurements gave "
        "(`rigwise validate intervals`)"
    )
    notes = dict.fromkeys(n for entry in intervals.values() for n in entry["notes"])
    for note in notes:
        out.print(f"  range widened: {note}")
    sides: dict[str, list[str]] = {}
    for quantity, entry in intervals.items():
        if entry.get("interval_note"):
            sides.setdefault(entry["interval_note"], []).append(quantity)
    for note, quantities in sides.items():
        out.print(f"  {', '.join(quantities)}: {note}")


__all__ = ["EXIT_BAD_INPUT", "infer", "render", "run_queries"]
