"""Page contexts: query parameters in, template context out. No web framework here.

Each page takes the same option names as the CLI (``/run?model=llama-3-8b&on=rtx-4090``), so a
plan is shareable as a link; the JSON shown is the library's own ``to_dict``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from rigwise import __version__
from rigwise.errors import RigwiseError, validation_message
from rigwise.serialize import to_jsonable
from rigwise.units import GiB
from rigwise.web import charts
from rigwise.web.inputs import web_options

NAV = (
    ("/fit", "What runs"),
    ("/compare", "Compare"),
    ("/run", "Run"),
    ("/train", "Train"),
    ("/build", "Build"),
    ("/machine", "My machine"),
    ("/grid", "Grid"),
)
CONTEXT_SWEEP = (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
CONCURRENCY_SWEEP = (1, 2, 4, 8, 16, 32, 64, 128)


def page(title: str, active: str, **context: Any) -> dict[str, Any]:
    return {
        "title": title,
        "active": active,
        "nav": NAV,
        "version": __version__,
        "charts": [],
        "error": None,
        **context,
    }


def clean(params: Mapping[str, str]) -> dict[str, str]:
    """Form values as given, minus the empty ones a form submits for untouched fields."""
    return {key: value.strip() for key, value in params.items() if value and value.strip()}


def user_message(exc: Exception) -> str:
    """A one-paragraph message for bad input: rigwise's own text, or pydantic's, per field."""
    if isinstance(exc, ValidationError):
        return validation_message(exc, "Bad input")
    return str(exc)


def attempt(call: Callable[[], Any]) -> tuple[Any, str | None]:
    """Run a planner call; bad input comes back as a message, never as a crash."""
    try:
        return call(), None
    except (RigwiseError, ValidationError, ValueError) as exc:
        return None, user_message(exc)


# --- Compare ---------------------------------------------------------------------------------


def compare_context(params: Mapping[str, str]) -> dict[str, Any]:
    from rigwise.api.gpus import list_gpus

    query = clean(params)
    result, error = attempt(lambda: list_gpus(**web_options(query)))
    devices = to_jsonable(result)["devices"] if result is not None else []
    ctx = page("Compare accelerators", "/compare", query=query, devices=devices, error=error)
    ctx["verdicts"] = _verdicts(devices)
    if devices:
        points = [
            {
                "memory GiB": d["memory_bytes"] / GiB,
                "bandwidth GB/s": d["memory_bandwidth_bytes_per_s"] / 1e9,
                "name": d["name"],
            }
            for d in devices
        ]
        ctx["charts"] = [
            charts.scatter(
                "compare-chart",
                "Memory vs bandwidth",
                points,
                "memory GiB",
                "bandwidth GB/s",
                "name",
            )
        ]
    return ctx


def _verdicts(devices: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Good buy for what, and why not (rigwise.design.verdict), per GPU shown."""
    from rigwise.design.verdict import verdict
    from rigwise.hardware import get_accelerator

    out = {}
    for device in devices:
        if device.get("kind") == "gpu":
            found = verdict(get_accelerator(device["id"]))
            out[device["id"]] = {"summary": found.summary(), **found.to_dict()}
    return out


# --- Run (inference) -----------------------------------------------------------------------------


def _sweep(base: Mapping[str, Any], change: Mapping[str, Any]) -> dict[str, Any] | None:
    from rigwise.api.infer import plan_inference

    result, _ = attempt(lambda: plan_inference(**{**base, **change}))
    plan = to_jsonable(result) if result is not None else None
    return plan if plan and plan.get("fits") else None


def _inference_sweeps(query: Mapping[str, str], plan: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Decode speed as the context fills, and serving speed as users are added, for the same
    engine and quantization the plan chose (so the curves explain this plan, not another)."""
    base: dict[str, Any] = {
        k: v for k, v in query.items() if k not in ("context", "concurrency", "prompt")
    }
    base.update(engine=plan["engine"], quant=plan["quant"], kv_quant=plan["kv_quant"], levers=False)
    gen = int(plan.get("workload", {}).get("gen") or 128)
    decode: list[Any] = []
    low: list[Any] = []  # the P10-P90 band of the decode prediction
    high: list[Any] = []
    for context in CONTEXT_SWEEP:
        swept = _sweep(base, {"context": context, "prompt": max(context - gen, 1)})
        found = (swept or {}).get("decode") or {}
        band = found.get("tokens_per_s_interval") or [None, None]
        decode.append(found.get("tokens_per_s"))
        low.append(band[0])
        high.append(band[1])
    aggregate, per_user = [], []
    aggregate_low, aggregate_high = [], []  # the P10-P90 band of the serving prediction
    for concurrency in CONCURRENCY_SWEEP:
        swept = _sweep(base, {"concurrency": concurrency})
        serving = (swept.get("serving") if swept else None) or {}
        ranged = serving.get("aggregate_tokens_per_s_interval") or [None, None]
        aggregate.append(serving.get("aggregate_tokens_per_s"))
        aggregate_low.append(ranged[0])
        aggregate_high.append(ranged[1])
        per_user.append(serving.get("per_user_tokens_per_s"))
    return [
        charts.speed_curve(
            "context-chart",
            "Decode speed as the context fills (gaps: does not fit)",
            "context tokens",
            CONTEXT_SWEEP,
            {"decode P10": low, "decode P90": high, "decode tokens/s": decode},
        ),
        charts.speed_curve(
            "concurrency-chart",
            "Serving speed vs concurrent requests",
            "concurrent requests",
            CONCURRENCY_SWEEP,
            {
                "aggregate P10": aggregate_low,
                "aggregate P90": aggregate_high,
                "aggregate": aggregate,
                "per user": per_user,
            },
        ),
    ]


def run_context(params: Mapping[str, str]) -> dict[str, Any]:
    query = clean(params)
    ctx = page("Will it run, and how fast?", "/run", query=query, plan=None)
    if "model" not in query:
        return ctx
    from rigwise.api.infer import plan_inference

    result, error = attempt(lambda: plan_inference(**web_options(query)))
    ctx["error"] = error
    if result is None:
        return ctx
    plan = to_jsonable(result)
    ctx["plan"] = plan
    ctx["charts"] = [charts.memory_bar(plan["memory"])]
    if plan.get("fits"):
        ctx["charts"] += _inference_sweeps(query, plan)
    return ctx


# --- Train -------------------------------------------------------------------------------------


def train_context(params: Mapping[str, str]) -> dict[str, Any]:
    query = clean(params)
    ctx = page("How long, how much, which layout?", "/train", query=query, plan=None)
    if "model" not in query:
        return ctx
    from rigwise.api.train import plan_training

    result, error = attempt(lambda: plan_training(**web_options(query)))
    ctx["error"] = error
    if result is None:
        return ctx
    plan = to_jsonable(result)
    ctx["plan"] = plan
    # the named parts of the step, in seconds (the total and counts such as microbatches aside)
    step = {
        k.removesuffix("_s"): v
        for k, v in (plan.get("step") or {}).items()
        if k.endswith("_s") and k != "seconds"
    }
    memory = {
        k.removesuffix("_bytes"): v / 1e9
        for k, v in (plan.get("memory_per_gpu") or {}).items()
        if k.endswith("_bytes") and k not in ("total_bytes", "capacity_bytes") and v
    }
    ctx["charts"] = [
        charts.breakdown_bar("step-chart", "Step time by part", _flatten_numbers(step), "seconds"),
        charts.breakdown_bar("train-memory-chart", "Memory per GPU", memory, "GB"),
    ]
    return ctx


def _flatten_numbers(parts: Mapping[str, Any]) -> dict[str, float]:
    flat: dict[str, float] = {}
    for key, value in parts.items():
        if isinstance(value, int | float):
            flat[key] = float(value)
        elif isinstance(value, Mapping):
            flat.update(
                {f"{key}.{k}": float(v) for k, v in value.items() if isinstance(v, int | float)}
            )
    return flat


# --- Build -------------------------------------------------------------------------------------


def build_context(params: Mapping[str, str]) -> dict[str, Any]:
    query = clean(params)
    ctx = page("What should I build?", "/build", query=query, design=None)
    if "model" not in query:
        return ctx
    from rigwise.design.api import design_builds

    result, error = attempt(lambda: design_builds(**web_options(query)))
    ctx["error"] = error
    if result is None:
        return ctx
    design = to_jsonable(result)
    ctx["design"] = design
    options = design.get("options") or []
    if any(o.get("decode_tokens_per_s") for o in options):
        ctx["charts"] = [charts.pareto(options, "decode_tokens_per_s", "decode tokens/s")]
    elif any(o.get("time_to_train_s") for o in options):  # training: days, known times only
        timed = [
            {
                **o,
                "days_to_train": o["time_to_train_s"] / 86400,
                "days_to_train_interval": [
                    b / 86400 for b in o.get("time_to_train_s_interval") or []
                ]
                or None,
            }
            for o in options
            if o.get("time_to_train_s")
        ]
        ctx["charts"] = [charts.pareto(timed, "days_to_train", "days to train")]
    return ctx


# --- My machine and Grid -------------------------------------------------------------


def machine_context() -> dict[str, Any]:
    from rigwise.bench.calibration import history
    from rigwise.probe import probe

    report, error = attempt(probe)
    runs, _ = attempt(lambda: history(limit=20))
    return page(
        "My machine",
        "/machine",
        report=to_jsonable(report),
        history=to_jsonable(runs or ()),
        error=error,
    )


def grid_page_context() -> dict[str, Any]:
    """The Grid page for the coordinator in $RIGWISE_GRID_URL (with $RIGWISE_GRID_TOKEN); a URL
    that is no http(s) URL is shown on the page (it answered the API's bare JSON)."""
    url, token = os.environ.get("RIGWISE_GRID_URL"), os.environ.get("RIGWISE_GRID_TOKEN")
    if not url or not token:
        return grid_context(None)
    from rigwise.grid.client import GridClient

    try:
        grid = GridClient(url, token)
    except RigwiseError as exc:
        ctx = grid_context(None)
        ctx.update(configured=True, error=f"{exc.message} {exc.hint or ''}".strip())
        return ctx
    return grid_context(grid)


def grid_context(grid: Any | None) -> dict[str, Any]:
    """Nodes, jobs, credit balances and the leaderboard, read from a coordinator's API."""
    ctx = page(
        "Grid", "/grid", configured=grid is not None, nodes=[], jobs=[], credits=[], models=[]
    )
    if grid is None:
        return ctx
    try:
        balances = grid.credits().get("balances", {})
        ctx.update(
            nodes=grid.nodes(),
            jobs=grid.jobs(),
            credits=[{"owner": k, "balance": v} for k, v in sorted(balances.items())],
            models=grid.models(),
        )
    except RigwiseError as exc:
        ctx["error"] = f"The grid coordinator did not answer: {exc}"
    return ctx
