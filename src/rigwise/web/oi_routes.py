"""The organoid page (``/oi``) and its JSON twins (``/api/oi/status``, ``/api/oi/series``).

The page reads the O.I. store named by ``$RIGWISE_OI_DB`` (default: oi.sqlite3 in the rigwise
data dir); it never takes a file path from the request. Charts refresh every 5 s.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse

from rigwise.errors import RigwiseError
from rigwise.serialize import to_jsonable
from rigwise.web import views

DB_ENV = "RIGWISE_OI_DB"
CHARTS = (  # chart id, title, series, y-axis
    ("oi-volumes", "Volumes", ("level", "reservoir"), "mL"),
    ("oi-flow", "Dosed (cumulative)", ("dosed_ml",), "mL"),
    ("oi-temperature", "Temperature", ("temperature",), "°C"),
    ("oi-ph", "pH", ("ph",), "pH"),
    ("oi-spikes", "Spike rate", ("spike_rate",), "Hz per electrode"),
    ("oi-health", "Health index", ("health",), "0-100"),
)


def store_path() -> Path:
    from rigwise.oi.store import default_db_path

    env = os.environ.get(DB_ENV)
    return Path(env) if env else default_db_path()


def _open() -> Any | None:
    from rigwise.oi.store import Store

    path = store_path()
    return Store(path) if path.is_file() else None


def _figure(
    chart_id: str,
    title: str,
    names: tuple[str, ...],
    unit: str,
    series: dict[str, list[list[float]]],
) -> dict[str, Any]:
    data = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": n,
            "x": [p[0] / 86400.0 for p in series.get(n, [])],
            "y": [p[1] for p in series.get(n, [])],
        }
        for n in names
    ]
    layout = {
        "title": {"text": title},
        "height": 260,
        "margin": {"l": 50, "r": 10, "t": 40, "b": 40},
        "xaxis": {"title": {"text": "day"}},
        "yaxis": {"title": {"text": unit}},
    }
    return {"id": chart_id, "data": data, "layout": layout}


def oi_context() -> dict[str, Any]:
    from rigwise.oi.status import charts_data, status

    ctx = views.page("Organoids", "/oi", store=str(store_path()), state=None, figures=[])
    ctx["nav"] = (*ctx["nav"], ("/oi", "Organoids"))
    try:
        store = _open()
    except RigwiseError as exc:  # a damaged store: the page says so (it was a bare JSON body)
        ctx["error"] = f"{exc.message} {exc.hint or ''}".strip()
        return ctx
    if store is None:
        return ctx
    try:
        series = charts_data(store)
        ctx.update(
            state=to_jsonable(status(store)),
            charts=[_figure(i, t, n, u, series) for i, t, n, u in CHARTS],
        )
    finally:
        store.close()
    return ctx


def register(app: FastAPI, render: Any) -> None:
    @app.get("/oi", response_class=HTMLResponse, include_in_schema=False)
    def oi_page(request: Request) -> HTMLResponse:
        response: HTMLResponse = render(request, "oi.html", oi_context())
        return response

    @app.get("/api/oi/status", tags=["oi"], summary="Health, latched alarms, latest readings")
    def api_oi_status() -> JSONResponse:
        from rigwise.oi.status import status

        store = _open()
        if store is None:
            return JSONResponse({"error": f"No O.I. store at {store_path()}."}, status_code=404)
        try:
            return JSONResponse(to_jsonable(status(store)))
        finally:
            store.close()

    @app.get("/api/oi/series", tags=["oi"], summary="Chart series since a time (s)")
    def api_oi_series(
        since_s: float = Query(-1e18, description="Simulated/real seconds"),
    ) -> JSONResponse:
        from rigwise.oi.status import charts_data

        store = _open()
        if store is None:
            return JSONResponse({"error": f"No O.I. store at {store_path()}."}, status_code=404)
        since = since_s if math.isfinite(since_s) else -1e18
        try:
            series = charts_data(store, since)
            return JSONResponse({"charts": [_figure(i, t, n, u, series) for i, t, n, u in CHARTS]})
        finally:
            store.close()
