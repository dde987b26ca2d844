"""The landing page: what runs on this hardware (``rigwise fit``), as a table and a chart."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rigwise.serialize import to_jsonable
from rigwise.web.views import attempt, clean, page

_COLOURS = {"runs": "#2a9d8f", "too slow": "#e9c46a", "does not fit": "#e76f51"}


def fit_context(params: Mapping[str, str]) -> dict[str, Any]:
    """Every catalog model ranked for ``on`` (blank: this machine)."""
    from rigwise.api.context import default_context_tokens
    from rigwise.api.fit import FitOptions, fit_models

    query = clean(params)

    def run() -> Any:
        options = FitOptions.model_validate(query)
        return fit_models(**options.model_dump(exclude_none=True))

    report, error = attempt(run)
    data = to_jsonable(report) if report is not None else None
    ctx = page(
        "What runs on this hardware?",
        "/fit",
        query=query,
        report=data,
        error=error,
        default_context=default_context_tokens(),
    )
    if data and data["models"]:
        ctx["charts"] = [_chart(data["models"])]
    return ctx


def _chart(models: list[dict[str, Any]]) -> dict[str, Any]:
    """Decode speed against model size for the models that fit, coloured by status."""
    traces = []
    for status, colour in _COLOURS.items():
        rows = [m for m in models if m["status"] == status and m["decode_tokens_per_s"]]
        if not rows:
            continue
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": status,
                "x": [m["params_total"] / 1e9 for m in rows],
                "y": [m["decode_tokens_per_s"] for m in rows],
                "text": [f"{m['model']} ({m['quant']})" for m in rows],
                "marker": {"color": colour, "size": 10},
            }
        )
    layout = {
        "title": "Decode speed by model size",
        "xaxis": {"title": "parameters (billions)", "type": "log"},
        "yaxis": {"title": "decode tokens/s", "type": "log"},
        "height": 420,
    }
    return {"id": "fit-chart", "data": traces, "layout": layout}
