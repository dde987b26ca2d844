"""Pareto plot of a design (cost against speed): HTML (plotly) and PNG (matplotlib).

Both libraries are imported lazily here and nowhere else in rigwise.design.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rigwise.design.designer import Design


def _points(design: Design) -> list[dict[str, Any]]:
    frontier = {id(o) for o in design.frontier}
    return [
        {
            "label": f"{o.kind}: {o.on}" + (f" x{o.nodes}" if o.nodes > 1 else ""),
            "cost": o.tco_usd,
            "speed": o.speed
            if o.decode_tokens_per_s is not None
            else (o.time_to_train_s or 0) / 86400,
            "frontier": id(o) in frontier,
        }
        for o in design.options
    ]


def pareto_plot(design: Design, directory: str | Path) -> tuple[Path, Path]:
    """Write pareto.html and pareto.png into ``directory``; returns both paths."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    points = _points(design)
    y_label = "decode tokens/s" if design.request.task in ("infer", "serve") else "days to train"
    html, png = out / "pareto.html", out / "pareto.png"
    import plotly.graph_objects as go

    figure = go.Figure(
        go.Scatter(
            x=[p["cost"] for p in points],
            y=[p["speed"] for p in points],
            text=[p["label"] for p in points],
            mode="markers+text",
            marker={"color": ["crimson" if p["frontier"] else "grey" for p in points]},
        )
    )
    figure.update_layout(
        title=f"{design.request.model}: TCO vs speed", xaxis_title="TCO (USD)", yaxis_title=y_label
    )
    figure.write_html(str(html), include_plotlyjs=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    for p in points:
        ax.scatter(p["cost"], p["speed"], color="crimson" if p["frontier"] else "grey")
        ax.annotate(p["label"], (p["cost"], p["speed"]), fontsize=7)
    ax.set_xlabel("TCO (USD)")
    ax.set_ylabel(y_label)
    ax.set_title(f"{design.request.model}: TCO vs speed")
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)
    return html, png
