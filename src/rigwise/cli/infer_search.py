"""`rigwise infer MODEL --on HW --search`: the serving layouts worth deploying, as a table."""

from __future__ import annotations

from typing import Any

from rigwise.cli._common import console, finish, ranged_rate, ranged_seconds

SEARCH_KEYS = (
    "model", "on", "nodes", "network", "cluster", "quant", "kv_quant", "prompt", "gen",
    "engine", "max_batch", "gpus", "slo_ttft", "slo_tpot",
)  # fmt: skip

_SHORT_MODE = {"aggregated": "agg", "disaggregated": "disagg"}


def run_search(options: dict[str, Any], as_json: bool) -> int:
    """Search serving layouts with the infer options that apply to a search."""
    from rigwise.api.serving_search import search_serving_layouts

    unused = sorted(k for k in options if k not in SEARCH_KEYS and k != "levers")
    if unused:
        from rigwise.cli._common import fail

        fail(_not_searched(unused))
    found = search_serving_layouts(**{k: v for k, v in options.items() if k in SEARCH_KEYS})
    return finish(found, as_json, render_search)


# What the search itself chooses; the other infer options are ones it does not model.
_CHOSEN = frozenset({"tp", "pp", "dp", "ep", "attention_dp", "split", "disagg", "concurrency"})
# Options whose search counterpart has another name.
_INSTEAD = {"latency_budget": "--slo-ttft / --slo-tpot"}


def _not_searched(keys: list[str]) -> str:
    """Why options given beside --search are refused, each with its own reason."""

    def flags(names: list[str]) -> str:
        return ", ".join("--" + k.replace("_", "-") for k in names)

    chosen = [k for k in keys if k in _CHOSEN]
    other = [k for k in keys if k not in _CHOSEN and k not in _INSTEAD]
    reasons = [f"{flags(chosen)}: the search chooses the layout and batch"] if chosen else []
    reasons += [f"{flags([k])}: the search takes {_INSTEAD[k]}" for k in keys if k in _INSTEAD]
    if other:
        reasons.append(f"{flags(other)}: not modelled by the search; plan one layout to use it")
    return f"{flags(keys)} cannot be combined with --search ({'; '.join(reasons)})."


def _layout(row: dict[str, Any]) -> str:
    parts = [f"tp{row['tp']}", f"pp{row['pp']}"]
    if row["ep"] > 1:
        parts.append(f"ep{row['ep']}")
    if row["attention_dp"] > 1:
        parts.append(f"adp{row['attention_dp']}")
    text = " ".join(parts)
    if row["mode"] == "disaggregated":
        return (
            f"prefill {row['prefill_workers']}x tp{row['prefill_tp']} | decode {row['dp']}x {text}"
        )
    return f"{row['dp']}x {text}"


def render_search(found: Any) -> None:
    from rich.table import Table

    from rigwise.units import format_seconds

    out = console()
    slos = found.slos_given
    out.print(
        f"{found.generated:,} layouts in {found.seconds * 1e3:.0f} ms "
        f"({found.generated / max(found.seconds, 1e-9):,.0f}/s; catalog lookup "
        f"{found.lookup_seconds * 1e3:.0f} ms); {found.feasible:,} "
        + ("meet the SLOs" if slos else "fit")
    )
    if found.rejected:
        out.print("rejected: " + ", ".join(f"{k} {v:,}" for k, v in found.rejected.items()))
    title = (
        "Pareto frontier: tok/s per GPU vs tok/s per user (agg: aggregated, disagg: disaggregated)"
    )
    columns = ("mode", "quant", "layout", "batch", "GPUs", "TTFT", "TPOT", "tok/s/GPU")
    table = Table(*columns, "tok/s/user", title=title)
    for row in found.rows:
        table.add_row(
            _SHORT_MODE.get(row["mode"], row["mode"]), row["quant"], _layout(row),
            str(row["running_batch"]),
            str(row["gpus"]), format_seconds(row["ttft_s"]), format_seconds(row["tpot_s"]),
            f"{row['tokens_per_s_per_gpu']:,.1f}", f"{row['tokens_per_s_per_user']:,.1f}",
        )  # fmt: skip
    if found.rows:  # no empty table when every layout is over an SLO
        out.print(table)
    for mode, row in (("aggregated", found.best_aggregated),
                      ("disaggregated", found.best_disaggregated)):  # fmt: skip
        if row:
            out.print(
                f"best {mode}: {row['quant']} {_layout(row)}, batch {row['running_batch']}: "
                + _ranged(row)
            )
        else:
            out.print(f"best {mode}: " + ("none meets the SLOs" if slos else "none fits"))
    for note in found.notes:
        out.print(f"note: {note}")


def _ranged(row: dict[str, Any]) -> str:
    """A best layout's speeds and latencies, each with its P10-P90 range (and which side
    similar rigs measured, when the whole range is on one side)."""

    def rate(name: str, unit: str) -> str:
        return ranged_rate(row[name], row.get(f"{name}_interval"), unit)

    def time(name: str, label: str) -> str:
        return f"{label} " + ranged_seconds(row[name], row.get(f"{name}_interval"))

    parts = [rate("tokens_per_s_per_gpu", "tok/s/GPU"), rate("tokens_per_s_per_user", "tok/s/user")]
    return ", ".join([*parts, time("ttft_s", "TTFT"), time("tpot_s", "TPOT")])
