"""Training predictions against published runs: per-source error statistics.

Each published row becomes a ``stats.Comparison`` (source, metric, label, predicted,
measured). The rows are the CSVs in ``validation/data/training`` (copies of
../shared/reference-data with their sources) plus ``holdout_*.csv`` files of runs found
elsewhere; settings a row does not state come from ``assumptions.csv`` in the same folder.
Metrics: ``step_s`` (iteration time; Megatron Table 1 TFLOP/s are turned into it with the
paper's Eq. 3), ``tokens_per_s_per_gpu``, ``memory_gib``, ``layer_ms`` (Korthikanti Table 4)
and, for the holdout, ``model_tflops_per_gpu`` / ``hardware_tflops_per_gpu``.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rigwise.estimate.training_layout import Layout, Workload
from rigwise.validation.comparisons import ToolComparison, tool_comparisons
from rigwise.validation.stats import (
    Comparison,
    ErrorStats,
    per_source,
)
from rigwise.validation.training_cases import (
    DATA_DIR,
    GIB,
    case,
    fabric,
    gpt_spec,
    predict,
    published_layout,
)
from rigwise.validation.training_cases import assumptions as _assumptions
from rigwise.validation.training_cases import rows as _rows
from rigwise.validation.training_finetune import FitVerdicts


@dataclass(frozen=True)
class TrainingValidation:
    """Every comparison, the per-(role, source, metric) statistics, like-for-like tool
    comparisons, and mean absolute errors. Rows of role ``formula`` are closed-form values
    (a paper's formula), reported as consistency checks, never as validation."""

    comparisons: tuple[Comparison, ...]
    stats: tuple[ErrorStats, ...]
    tools: tuple[ToolComparison, ...] = ()
    verdicts: FitVerdicts | None = None  # fine-tuning fits/OOM verdicts (independent rows)

    def _errors(self, role: str, source: str, metric: str) -> list[float]:
        return [
            abs(c.error_pct)
            for c in self.comparisons
            if (c.role, c.source, c.metric) == (role, source, metric)
        ]

    def mean_abs_error_pct(self, source: str, metric: str, role: str = "fit") -> float:
        errors = self._errors(role, source, metric)
        return statistics.fmean(errors) if errors else float("nan")

    def to_dict(self) -> dict[str, Any]:
        from rigwise.validation.coverage import coverage_by_regime

        return {
            "stats": [
                {
                    **s.to_dict(),
                    "mean_abs_error_pct": self.mean_abs_error_pct(s.source, s.metric, s.role),
                    "max_abs_error_pct": max(self._errors(s.role, s.source, s.metric)),
                }
                for s in self.stats
            ],
            # held-out P10-P90 coverage of the independent rows per regime (validation/coverage)
            "interval_coverage_by_regime": [
                r.to_dict() for r in coverage_by_regime(self.comparisons)
            ],
            "tool_comparisons": [t.to_dict() for t in self.tools],
            "finetune_verdicts": self.verdicts.to_dict() if self.verdicts else None,
            "comparisons": [c.to_dict() for c in self.comparisons],
        }


def _megatron_table1(directory: Path) -> Iterator[Comparison]:
    name = "megatron_lm_2021_table1_weak_scaling.csv"
    assume = _assumptions(directory)
    fab = fabric("a100-sxm-80gb", 8, "ib-hdr", 8)
    for row in _rows(directory, name):
        h, a, layers = int(row["hidden_size"]), int(row["attention_heads"]), int(row["num_layers"])
        s, v = int(row["seq_len"]), int(row["vocab_size"])
        tp, pp, gpus = (
            int(row["tensor_parallel"]),
            int(row["pipeline_parallel"]),
            int(row["num_gpus"]),
        )
        batch = int(row["global_batch_size"])
        vpp = int(assume.get((name, "vpp"), "1")) if pp > 1 and (layers // pp) % 2 == 0 else 1
        mb = int(assume.get((name, "micro_batch"), "1"))
        work = Workload(
            seq_len=s,
            global_batch=batch,
            flash_attention=False,
            dropout=True,
            overlap_grad_reduce=assume.get((name, "overlap_grad_reduce")) == "1",
        )
        layout = Layout(
            tp=tp,
            pp=pp,
            dp=gpus // (tp * pp),
            vpp=vpp,
            micro_batch=mb,
            global_batch=batch,
            recompute="full",
        )
        spec = gpt_spec(h, a, layers, v, s, f"GPT {row['params_billion']}B")
        # Narayanan et al. 2021 Eq. 3: FLOPs per iteration with full recompute.
        flops = 96 * batch * s * layers * h * h * (1 + s / (6 * h) + v / (16 * layers * h))
        measured = flops / (float(row["achieved_tflops_per_gpu"]) * 1e12 * gpus)
        ev = predict(spec, work, layout, fab)
        predicted = float(ev.step.seconds[0])
        source = "Megatron-LM 2021 Table 1"
        yield case(source, spec.name, "step_s", measured, predicted, row["role"], fab, gpus)


def _korthikanti_rows(directory: Path) -> Iterator[tuple[dict[str, str], Any, Workload, Layout]]:
    name = "korthikanti_2022_table3_table5_end_to_end.csv"
    assume = _assumptions(directory)
    for row in _rows(directory, name):
        h, a, layers = int(row["hidden_size"]), int(row["attention_heads"]), int(row["num_layers"])
        s, v = int(row["seq_len"]), int(row["vocab_size"])
        batch = int(row["global_batch_size"])
        work = Workload(
            seq_len=s,
            global_batch=batch,
            flash_attention=False,
            dropout=True,
            overlap_grad_reduce=assume.get((name, "overlap_grad_reduce")) == "1",
        )
        layout = published_layout(row, batch)
        yield row, gpt_spec(h, a, layers, v, s, row["model"]), work, layout


def _korthikanti_table5(directory: Path) -> Iterator[Comparison]:
    fab = fabric("a100-sxm-80gb", 8, "ib-hdr", 8)
    for row, spec, work, layout in _korthikanti_rows(directory):
        variants = (
            ("iter_time_s_full_recompute", "full", False),
            ("iter_time_s_seqpar_plus_selective", "selective", True),
        )
        for column, recompute, sp in variants:
            if not row[column]:
                continue
            lay = dataclasses.replace(layout, recompute=recompute, sequence_parallel=sp)
            ev = predict(spec, work, lay, fab)
            label = f"{spec.name} {recompute}{' + SP' if sp else ''}"
            yield case(
                "Korthikanti 2022 Table 5",
                label,
                "step_s",
                float(row[column]),
                float(ev.step.seconds[0]),
                row["role"],
                fab,
                lay.gpus,
            )


_TABLE4 = {
    "Baseline no recompute": ("none", False),
    "Sequence Parallelism": ("none", True),
    "Baseline with (full) recompute": ("full", False),
    "Selective Recompute": ("selective", False),
    "Selective + Sequence": ("selective", True),
}


def _korthikanti_table4(directory: Path) -> Iterator[Comparison]:
    fab = fabric("a100-sxm-80gb", 8, "ib-hdr", 8)
    spec = gpt_spec(6144, 64, 48, 51200, 2048, "22B layer")
    work = Workload(seq_len=2048, global_batch=4, flash_attention=False, dropout=True)
    layer_parts = ("compute_s", "recompute_s", "memory_bound_s", "tp_comm_s", "overhead_s")
    for row in _rows(directory, "korthikanti_2022_table4_per_layer_22B.csv"):
        recompute, sp = _TABLE4[row["experiment"]]
        layout = Layout(
            tp=8, micro_batch=4, global_batch=4, recompute=recompute, sequence_parallel=sp
        )
        ev = predict(spec, work, layout, fab)
        layer_s = sum(float(ev.step.parts[p][0]) for p in layer_parts) / spec.num_layers
        yield case(
            "Korthikanti 2022 Table 4",
            row["experiment"],
            "layer_ms",
            float(row["combined_ms"]),
            layer_s * 1e3,
            row["role"],
            fab,
            8,
        )


_CALCULON_MODES = {
    "no recompute, no sequence parallel": ("none", False),
    "sequence parallel + selective recompute": ("selective", True),
}


def _calculon_memory(directory: Path) -> Iterator[Comparison]:
    fab = fabric("a100-sxm-80gb", 8, "ib-hdr", 8)
    table3: dict[str, Any] = {}
    for row, spec, work, lay in _korthikanti_rows(directory):
        table3.setdefault(row["model"].split()[0], (row, spec, work, lay))
    for row in _rows(directory, "calculon_korthikanti2022_validation_targets.csv"):
        if row["calculon_test"] != "seqsel_fig1" or row["mode"] not in _CALCULON_MODES:
            continue
        key = row["model"].split("-")[-1]
        if key not in table3:
            continue
        _, spec, work, layout = table3[key]
        recompute, sp = _CALCULON_MODES[row["mode"]]
        ev = predict(
            spec, work, dataclasses.replace(layout, recompute=recompute, sequence_parallel=sp), fab
        )
        if row["quantity"].startswith("activation"):
            predicted = float(ev.memory.activations[0])
        else:
            predicted = float(
                ev.memory.weights[0] + ev.memory.gradients[0] + ev.memory.optimizer[0]
            )
        label = f"{row['model']} {row['quantity'].split(' per')[0]} ({row['mode']})"
        yield case(
            "Korthikanti 2022 Figure 1 (Calculon)",
            label,
            "memory_gib",
            float(row["value"]),
            predicted / GIB,
            row["role"],
        )


def run_cases(directory: str | Path | None = None) -> list[Comparison]:
    """Every case the folder's files give (the packaged copies by default)."""
    from rigwise.validation.training_finetune import finetune_memory_cases
    from rigwise.validation.training_runs import holdout_cases, llmfoundry_cases, torchtitan_cases

    folder = Path(directory) if directory else DATA_DIR
    cases: list[Comparison] = []
    for loader in (
        _megatron_table1,
        _korthikanti_table5,
        _korthikanti_table4,
        _calculon_memory,
        torchtitan_cases,
        llmfoundry_cases,
        holdout_cases,
        finetune_memory_cases,
    ):
        cases.extend(loader(folder))
    return cases


def validate_training(directory: str | Path | None = None) -> TrainingValidation:
    """Predictions against every published run in ``directory`` (packaged copies by default)."""
    from rigwise.validation.coverage import annotate
    from rigwise.validation.training_finetune import finetune_verdicts

    comparisons = tuple(annotate(run_cases(directory)))
    tools = tuple(tool_comparisons(comparisons))
    folder = Path(directory) if directory else DATA_DIR
    verdicts = finetune_verdicts(folder)
    return TrainingValidation(comparisons, tuple(per_source(comparisons)), tools, verdicts)
