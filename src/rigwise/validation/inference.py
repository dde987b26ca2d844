"""``rigwise validate inference``: the planner against published inference measurements.

Predicts every measurement ``validation.inference_readers`` reads from a folder (by default the
copies kept in ``validation/data/inference``, each row with its source) and compares: decode
tokens/s, prefill tokens/s, serving throughput, TTFT and TPOT. Rows published as out-of-memory
must be predicted "does not fit"; rows that ran, "fits" or "tight". Every row is either
predicted or skipped with a counted reason. Every row states its ``role`` (``fit``: it set a
factor of ``efficiency_inference.csv`` / ``engine_overheads.csv``, named in ``fit_factor``;
``independent``: never used to fit); a file without it is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rigwise.errors import RigwiseError
from rigwise.validation.inference_readers import Measurement, load_measurements
from rigwise.validation.inference_serving import benchmark_tpot_seconds, benchmark_ttft_seconds
from rigwise.validation.stats import Comparison, Coverage, ErrorStats, coverage, per_source


@dataclass(frozen=True)
class InferenceValidation:
    comparisons: tuple[Comparison, ...]
    stats: tuple[ErrorStats, ...]
    coverage: Coverage
    oom_rows: int
    oom_predicted_does_not_fit: int
    ran_rows: int
    ran_predicted_fit: int
    fit_mismatches: tuple[str, ...]
    unknown_files: tuple[str, ...] = ()
    plots: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        from rigwise.validation.coverage import coverage_by_regime

        return {
            "stats": [s.to_dict() for s in self.stats],
            # held-out P10-P90 coverage of the independent rows per regime (validation/coverage)
            "interval_coverage_by_regime": [
                r.to_dict() for r in coverage_by_regime(self.comparisons)
            ],
            "coverage": self.coverage.to_dict(),
            "fit_check": {
                "oom_rows": self.oom_rows,
                "oom_predicted_does_not_fit": self.oom_predicted_does_not_fit,
                "ran_rows": self.ran_rows,
                "ran_predicted_fit": self.ran_predicted_fit,
                "mismatches": list(self.fit_mismatches),
            },
            "unknown_files": list(self.unknown_files),
            "plots": list(self.plots),
            "rows": [c.to_dict() for c in self.comparisons],
        }


def validate_inference(
    directory: Path | None = None, plot_dir: Path | None = None
) -> InferenceValidation:
    """Predict every measurement in ``directory`` and summarize the errors per source."""
    from rigwise.api.infer import plan_inference

    measurements, unknown = load_measurements(directory)
    comparisons: list[Comparison] = []
    skips: list[str] = []
    mismatches: list[str] = []
    oom_ok = ran = ran_ok = ooms = 0
    for m in measurements:
        if m.skip:
            skips.append(m.skip)
            continue
        try:
            plan = plan_inference(**m.options, levers=False)
        except RigwiseError as exc:
            skips.append(f"planner refused: {type(exc).__name__}")
            continue
        if m.oom:
            ooms += 1
            oom_ok += not plan.fits
            if plan.fits:
                mismatches.append(f"{m.source}: {m.label}: published OOM, predicted {plan.verdict}")
            continue
        ran += 1
        ran_ok += plan.fits
        if not plan.fits:
            mismatches.append(
                f"{m.source}: {m.label}: ran, predicted {plan.verdict}: {plan.reason}"
            )
            continue
        predicted = _predicted(plan, m.metric, m.arrivals, m.pure_decode)
        if predicted is None or m.measured is None:
            skips.append("no prediction for this metric")
            continue
        comparisons.append(_comparison(m, plan, predicted, m.measured))
    from rigwise.validation.coverage import annotate

    comparisons = annotate(comparisons)
    predicted_rows = len(comparisons) + ooms
    plots = _plots(comparisons, plot_dir)
    return InferenceValidation(
        comparisons=tuple(comparisons),
        stats=tuple(per_source(comparisons)),
        coverage=coverage(
            len(measurements),
            predicted_rows,
            skips + ["planner predicted does not fit"] * (ran - ran_ok),
        ),
        oom_rows=ooms,
        oom_predicted_does_not_fit=oom_ok,
        ran_rows=ran,
        ran_predicted_fit=ran_ok,
        fit_mismatches=tuple(mismatches),
        unknown_files=tuple(unknown),
        plots=tuple(plots),
    )


def _plots(comparisons: list[Comparison], plot_dir: Path | None) -> list[str]:
    """The plots written to ``plot_dir`` (none without a folder or rows)."""
    if plot_dir is None or not comparisons:
        return []
    from rigwise.validation.stats import write_plots

    return [str(p) for p in write_plots(comparisons, Path(plot_dir), "inference_validation")]


def _predicted(
    plan: Any, metric: str, arrivals: tuple[float, int, str], pure_decode: bool = False
) -> float | None:
    """The planned figure a row's benchmark reports. A pure-decode TPOT (the batch's prompts
    cached by a priming run, the batch entering decode together, no prefill chunk in the
    measured steps) is the running batch's decode step at the mid-decode context."""
    if metric == "tpot" and pure_decode:
        return float(plan.serving.step_seconds) if plan.serving else None
    if metric == "ttft" and plan.serving:
        return benchmark_ttft_seconds(plan.serving, *arrivals)
    if metric == "tpot":
        return benchmark_tpot_seconds(plan.serving, *arrivals[1:]) if plan.serving else None
    if metric == "decode":
        return plan.decode.tokens_per_s if plan.decode else None
    if metric == "prefill":
        return plan.prefill.tokens_per_s if plan.prefill else None
    return plan.serving.aggregate_tokens_per_s if plan.serving else None


def _comparison(m: Measurement, plan: Any, predicted: float, measured: float) -> Comparison:
    from rigwise.estimate.plan_intervals import plan_regime

    found = plan_regime(plan, m.metric)
    regime, devices = found if found else (None, 1)
    return Comparison(
        m.source,
        m.metric,
        m.label,
        predicted,
        measured,
        m.role,
        regime=regime.key() if regime else "",
        group=_device_group(str(m.options.get("on", ""))),
        devices=devices,
    )


def _device_group(on: str) -> str:
    """``4x rtx-3090`` -> ``rtx-3090``: held-out coverage leaves a device out, at every count."""
    count, _, rest = on.partition("x ")
    return rest if count.isdigit() and rest else on
