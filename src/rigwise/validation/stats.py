"""Error statistics of predictions against measurements, and the predicted-vs-measured plot.

Shared by ``validation/inference.py`` and ``validation/training.py``. The error of one row is
``(predicted - measured) / measured`` in percent; a source is summarized by the median and the
90th percentile of the absolute error, plus the signed median (bias), separately per role:
``fit`` rows set an efficiency factor (their error is in-sample), ``independent`` rows never
did, ``formula`` rows are closed-form values from a paper (a consistency check of a formula,
not a measurement). Coverage counts the rows predicted against the rows read, with every
skip's reason counted. Plots import plotly and matplotlib lazily (only ``--plot-dir`` pays).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rigwise.errors import InputError

ROLES = ("independent", "fit", "formula")  # reporting order: independent first
TIME_METRICS = frozenset({"step_s", "layer_ms", "gpu_hours", "ttft", "tpot"})  # smaller is faster
NOT_MEASUREMENTS = frozenset({"name_map.csv", "assumptions.csv"})


def require_roles(path: Path, rows: Sequence[dict[str, str]]) -> None:
    """Every measurement row states its role; a ``fit`` row names the factor it set."""
    for number, row in enumerate(rows, start=2):
        role = row.get("role")
        if role is None:
            raise InputError(
                f"{path.name} has no 'role' column.",
                hint="Add a 'role' column (fit | independent | formula) and a 'fit_factor' "
                "column naming the factor each fit row set (see validation/data/README.md).",
            )
        if role not in ROLES:
            raise InputError(
                f"{path.name} row {number}: role {role!r} is not one of {', '.join(ROLES)}.",
                hint="fit = the row set an efficiency factor; independent = never used to fit.",
            )
        if role == "fit" and not row.get("fit_factor"):
            raise InputError(
                f"{path.name} row {number}: a fit row must name its factor in 'fit_factor'.",
                hint="e.g. 'efficiency_inference.csv llama.cpp;ollama apple-* q8_0'.",
            )


@dataclass(frozen=True)
class Comparison:
    """One predicted number next to its published measurement."""

    source: str  # e.g. "llama.cpp Apple (#4167)"
    metric: str  # decode | prefill | serving | step_time | ...
    label: str  # what the row is, for tables and plot hovers
    predicted: float
    measured: float
    role: str = "independent"  # fit | independent | formula (see ROLES)
    regime: str = ""  # the interval regime of the row (estimate/intervals.py), "" if none
    group: str = ""  # the hardware it ran on: held-out interval coverage leaves a group out
    devices: int = 1
    inside: bool | None = None  # measured within the P10-P90 range (held out for independent)
    # ... against the range its own device would get, without this row (validation/coverage)
    inside_seen: bool | None = None

    @property
    def log_residual(self) -> float:
        """ln(measured / predicted) in rate terms (times inverted): what a range multiplies."""
        ratio = math.log(self.measured / self.predicted)
        return -ratio if self.metric in TIME_METRICS else ratio

    @property
    def error_pct(self) -> float:
        return 100.0 * (self.predicted - self.measured) / self.measured

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "metric": self.metric,
            "label": self.label,
            "predicted": self.predicted,
            "measured": self.measured,
            "error_pct": self.error_pct,
            "role": self.role,
            "regime": self.regime,
            "inside_interval": self.inside,
        }


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default method), ``q`` in 0-100."""
    if not values:
        return math.nan
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass(frozen=True)
class ErrorStats:
    source: str
    metric: str
    role: str
    rows: int
    median_abs_error_pct: float
    p90_abs_error_pct: float
    median_error_pct: float  # signed: positive means rigwise predicts too high
    interval_coverage: float | None = None  # share of rows inside their P10-P90 range
    interval_rows: int = 0  # rows with a range

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "metric": self.metric,
            "role": self.role,
            "rows": self.rows,
            "median_abs_error_pct": self.median_abs_error_pct,
            "p90_abs_error_pct": self.p90_abs_error_pct,
            "median_error_pct": self.median_error_pct,
            "interval_coverage": self.interval_coverage,
            "interval_rows": self.interval_rows,
        }


def error_stats(
    source: str, metric: str, comparisons: Iterable[Comparison], role: str = "independent"
) -> ErrorStats:
    rows = list(comparisons)
    errors = [c.error_pct for c in rows]
    absolute = [abs(e) for e in errors]
    ranged = [c.inside for c in rows if c.inside is not None]
    return ErrorStats(
        source=source,
        metric=metric,
        role=role,
        rows=len(errors),
        median_abs_error_pct=percentile(absolute, 50),
        p90_abs_error_pct=percentile(absolute, 90),
        median_error_pct=percentile(errors, 50),
        interval_coverage=sum(ranged) / len(ranged) if ranged else None,
        interval_rows=len(ranged),
    )


def per_source(comparisons: Sequence[Comparison]) -> list[ErrorStats]:
    """One ``ErrorStats`` per (role, source, metric): independent rows first, then fit, then
    formula checks; first-seen order within a role."""
    keys = list(dict.fromkeys((c.role, c.source, c.metric) for c in comparisons))
    keys.sort(key=lambda k: ROLES.index(k[0]))
    return [
        error_stats(s, m, [c for c in comparisons if (c.role, c.source, c.metric) == (r, s, m)], r)
        for r, s, m in keys
    ]


@dataclass(frozen=True)
class Coverage:
    rows_total: int
    rows_predicted: int
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> rows

    @property
    def fraction(self) -> float:
        return self.rows_predicted / self.rows_total if self.rows_total else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows_total": self.rows_total,
            "rows_predicted": self.rows_predicted,
            "coverage": self.fraction,
            "skipped": dict(self.skipped),
        }


def coverage(rows_total: int, rows_predicted: int, skip_reasons: Iterable[str]) -> Coverage:
    return Coverage(rows_total, rows_predicted, dict(Counter(skip_reasons).most_common()))


def write_plots(comparisons: Sequence[Comparison], directory: Path, stem: str) -> list[Path]:
    """Predicted vs measured on log-log axes, one colour per source, one plot per role:
    ``stem``_independent.html/.png and ``stem``_fit.html/.png (formula checks are not plotted)."""
    directory.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    for role in ("independent", "fit"):
        rows = [c for c in comparisons if c.role == role]
        if rows:
            title = f"rigwise: predicted vs measured ({role} rows)"
            paths.append(_plot_html(rows, directory / f"{stem}_{role}.html", title))
            paths.append(_plot_png(rows, directory / f"{stem}_{role}.png", title))
    return paths


def _series(comparisons: Sequence[Comparison]) -> dict[str, list[Comparison]]:
    groups: dict[str, list[Comparison]] = {}
    for c in comparisons:
        groups.setdefault(f"{c.source} / {c.metric}", []).append(c)
    return groups


def _bounds(comparisons: Sequence[Comparison]) -> tuple[float, float]:
    values = [v for c in comparisons for v in (c.predicted, c.measured) if v > 0]
    return (min(values) / 1.5, max(values) * 1.5) if values else (0.1, 10.0)


def _plot_html(comparisons: Sequence[Comparison], path: Path, title: str) -> Path:
    import plotly.graph_objects as go  # lazy: only plots pay for plotly

    figure = go.Figure()
    for name, rows in _series(comparisons).items():
        figure.add_trace(
            go.Scatter(
                x=[c.measured for c in rows],
                y=[c.predicted for c in rows],
                mode="markers",
                name=name,
                text=[f"{c.label}: {c.error_pct:+.1f}%" for c in rows],
            )
        )
    low, high = _bounds(comparisons)
    figure.add_trace(go.Scatter(x=[low, high], y=[low, high], mode="lines", name="exact"))
    figure.update_layout(
        title=title,
        xaxis={"title": "measured", "type": "log"},
        yaxis={"title": "predicted", "type": "log"},
    )
    figure.write_html(str(path), include_plotlyjs=True, full_html=True)  # offline, no CDN
    return path


def _plot_png(comparisons: Sequence[Comparison], path: Path, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(figsize=(8, 7))
    for name, rows in _series(comparisons).items():
        axes.scatter([c.measured for c in rows], [c.predicted for c in rows], s=14, label=name)
    low, high = _bounds(comparisons)
    axes.plot([low, high], [low, high], color="grey", linewidth=1)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("measured")
    axes.set_ylabel("predicted")
    axes.set_title(title)
    axes.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
