"""Plotly figures as plain dicts (rendered by the plotly.js that ships inside the plotly package,
so pages work offline). Each function takes the JSON a planner returns."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rigwise.units import GB

_PALETTE = ("#2357c6", "#d9822b", "#1f7a3d", "#8e44ad", "#b3261e", "#5d6577")


def chart(chart_id: str, data: list[dict[str, Any]], layout: dict[str, Any]) -> dict[str, Any]:
    base = {
        "margin": {"l": 60, "r": 20, "t": 50, "b": 60},
        "legend": {"orientation": "h"},
        "yaxis": {"automargin": True},
    }
    return {"id": chart_id, "data": data, "layout": _titled({**base, **layout})}


def _titled(layout: dict[str, Any]) -> dict[str, Any]:
    """plotly.js 3 takes titles as ``{"text": ...}`` objects, for the figure and each axis."""
    out = dict(layout)
    if isinstance(out.get("title"), str):
        out["title"] = {"text": out["title"]}
    for axis in ("xaxis", "yaxis"):
        if isinstance(out.get(axis), dict) and isinstance(out[axis].get("title"), str):
            out[axis] = {"automargin": True, **out[axis], "title": {"text": out[axis]["title"]}}
    return out


def memory_bar(memory: Mapping[str, Any]) -> dict[str, Any]:
    """Stacked bar per device: weights, KV cache, activations, overhead against capacity."""
    devices = memory.get("per_device") or []
    names = [d.get("device", "") for d in devices]
    parts = ("weights_bytes", "kv_cache_bytes", "activations_bytes", "overhead_bytes")
    data = [
        {
            "type": "bar",
            "orientation": "h",
            "name": part.removesuffix("_bytes").replace("_", " "),
            "y": names,
            "x": [round((d.get(part) or 0.0) / GB, 2) for d in devices],
            "marker": {"color": _PALETTE[i]},
        }
        for i, part in enumerate(parts)
    ]
    data.append(
        {
            "type": "scatter",
            "mode": "markers",
            "name": "capacity",
            "y": names,
            "x": [round((d.get("capacity_bytes") or 0.0) / GB, 2) for d in devices],
            "marker": {"symbol": "line-ns-open", "size": 28, "color": "#1d2433"},
        }
    )
    layout = {"barmode": "stack", "title": "Memory per device", "xaxis": {"title": "GB"}}
    return chart("memory-chart", data, layout)


def speed_curve(
    chart_id: str,
    title: str,
    x_title: str,
    xs: Sequence[float],
    series: Mapping[str, Sequence[Any]],
) -> dict[str, Any]:
    """Lines of tokens/s (or any figure) against a swept input; a series named ``... P10`` and
    its ``... P90`` partner are drawn as a shaded band (the P10-P90 range of the prediction)."""
    data = []
    for name, ys in series.items():
        band = name.endswith(" P90")
        trace: dict[str, Any] = {"type": "scatter", "name": name, "x": list(xs), "y": list(ys)}
        if name.endswith((" P10", " P90")):
            trace.update(mode="lines", line={"width": 0}, showlegend=band)
            if band:  # fill down to the P10 trace drawn just before it
                trace.update(fill="tonexty", fillcolor="rgba(99,110,250,0.15)")
                trace["name"] = name.removesuffix(" P90") + " P10-P90"
        else:
            trace["mode"] = "lines+markers"
        data.append(trace)
    layout = {
        "title": title,
        "xaxis": {"title": x_title, "type": "log"},
        "yaxis": {"title": "tokens/s"},
    }
    return chart(chart_id, data, layout)


def breakdown_bar(
    chart_id: str, title: str, parts: Mapping[str, float], unit: str
) -> dict[str, Any]:
    """One horizontal bar per named part of a breakdown (step time, memory)."""
    names = [k for k, v in parts.items() if isinstance(v, int | float) and v > 0]
    data = [{"type": "bar", "orientation": "h", "y": names, "x": [parts[k] for k in names]}]
    return chart(chart_id, data, {"title": title, "xaxis": {"title": unit}})


def pareto(
    options: Sequence[Mapping[str, Any]], speed_key: str, speed_title: str
) -> dict[str, Any]:
    """Total cost of ownership against speed for the designer's options: bought builds and
    rented GPUs on one axis (a rented option's purchase price is zero, its TCO is not)."""
    data = []
    for i, kind in enumerate(sorted({o.get("kind", "") for o in options})):
        chosen = [o for o in options if o.get("kind", "") == kind]
        data.append({
            "type": "scatter", "mode": "markers+text", "name": kind,
            "x": [o.get("tco_usd") for o in chosen], "y": [o.get(speed_key) for o in chosen],
            "text": [o.get("on", "") for o in chosen], "textposition": "top center",
            "marker": {"size": 11, "color": _PALETTE[i % len(_PALETTE)]},
            "error_y": _error_bars(chosen, speed_key),
        })  # fmt: skip
    layout = {"title": "Cost vs speed", "xaxis": {"title": "total cost of ownership (USD)"},
              "yaxis": {"title": speed_title}}  # fmt: skip
    return chart("pareto-chart", data, layout)


def _error_bars(options: Sequence[Mapping[str, Any]], key: str) -> dict[str, Any]:
    """The P10-P90 of each option's ``key`` (``<key>_interval``) as asymmetric error bars."""
    up, down = [], []
    for o in options:
        value, bounds = o.get(key), o.get(f"{key}_interval") or [None, None]
        ok = isinstance(value, int | float) and all(isinstance(b, int | float) for b in bounds)
        up.append(bounds[1] - value if ok else None)
        down.append(value - bounds[0] if ok else None)
    return {"type": "data", "symmetric": False, "array": up, "arrayminus": down, "width": 0}


def scatter(
    chart_id: str, title: str, points: Sequence[Mapping[str, Any]], x: str, y: str, label: str
) -> dict[str, Any]:
    data = [
        {
            "type": "scatter",
            "mode": "markers+text" if len(points) <= 12 else "markers",  # names, unless crowded
            "x": [p[x] for p in points],
            "y": [p[y] for p in points],
            "text": [p[label] for p in points],
            "textposition": "top center",
            "marker": {"size": 9, "color": _PALETTE[0]},
        }
    ]
    return chart(chart_id, data, {"title": title, "xaxis": {"title": x}, "yaxis": {"title": y}})
