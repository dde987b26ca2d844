"""Fine-tuning memory against published runs: peak memory per GPU (``finetune_memory_runs.csv``)
and the fits/OOM verdict (those runs, which all fitted, plus ``finetune_fit_verdicts.csv``:
runs a source says did or did not fit).

Each row is planned through the public API with every layout flag fixed (so no search moves
it) and the settings the source states; the measured peak per GPU (GiB) is compared with the
part of the plan its counter counts (the row's ``quantity``: allocated, reserved or the
total), and the verdict with the published one.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rigwise.validation.stats import Comparison

FILE = "finetune_memory_runs.csv"
VERDICTS = "finetune_fit_verdicts.csv"
SOURCE = "fine-tune memory (not in shared/)"


def plan_row(row: Mapping[str, str]) -> Any:
    """The row's run planned with its layout fixed (``TrainingPlan``)."""
    from rigwise.api.train import plan_training

    gpus, mb = int(row["gpus"]), int(row["micro_batch"])
    tp = int(row.get("tp") or 1)  # tensor parallel without sequence parallelism; empty = 1
    framework = row.get("framework") or None
    return plan_training(
        **_stated(row),
        model=row["model"],
        on=f"{gpus}x {row['device']}",
        method=row["method"],
        framework=framework,
        seq=int(row["seq_len"]),
        micro_batch=mb,
        global_batch=mb * gpus // tp,
        tp=tp,
        pp=1,
        cp=1,
        ep=1,
        vpp=1,
        dp=gpus // tp,
        sequence_parallel=False,
        zero=int(row["zero"]),
        recompute=row["recompute"],
        offload=row.get("offload") or "none",
        precision=row.get("precision") or "bf16",
        pure_bf16=row["pure_bf16"] == "1",
        paged_optimizer=row["paged_optimizer"] == "1",
        lora_rank=int(row["lora_rank"]),
    )


def _stated(row: Mapping[str, str]) -> dict[str, Any]:
    """Settings a row states beyond the common columns (empty: the framework preset's or the
    default): ``lora_targets`` (``q v`` ...), ``optimizer``, ``chunked_loss``, ``fused_loss``,
    ``activation_offload``, ``flash_attention`` (0/1)."""
    stated: dict[str, Any] = {}
    if row.get("lora_targets"):
        stated["lora_targets"] = row["lora_targets"].split()
    if row.get("optimizer"):
        stated["optimizer"] = row["optimizer"]
    for flag in ("chunked_loss", "fused_loss", "activation_offload", "flash_attention"):
        if row.get(flag):
            stated[flag] = row[flag] == "1"
    return stated


def predicted_gib(row: Mapping[str, str], memory: Any) -> float:
    """The part of the plan's memory that the counter the source read counts: the row's
    ``quantity`` (``training_cases.MEMORY_QUANTITIES``: allocated, reserved or the total)."""
    from rigwise.validation.training_cases import predicted_memory_gib

    return predicted_memory_gib(
        row["quantity"], memory.tensor_bytes, memory.reserved_bytes, memory.total_bytes
    )


def finetune_memory_cases(directory: Path) -> Iterator[Comparison]:
    from rigwise.estimate.plan_intervals import training_regime
    from rigwise.validation.training_cases import rows as _rows

    for row in _rows(directory, FILE):
        plan = plan_row(row)
        if plan.memory_per_gpu is None:
            continue
        predicted = predicted_gib(row, plan.memory_per_gpu)
        gpus = int(row["gpus"])
        regime = training_regime("train_memory", plan.accelerator, gpus)
        yield Comparison(
            SOURCE,
            "memory_gib",
            row["run"],
            predicted,
            float(row["value"]),
            row["role"],
            regime=regime.key(),
            group=plan.accelerator,  # held-out coverage leaves a device out
            devices=gpus,
        )


@dataclass(frozen=True)
class FitVerdicts:
    """Published fits/OOM verdicts of fine-tuning runs against rigwise's (independent rows)."""

    rows: int
    right: int
    oom_rows: int
    oom_right: int
    mismatches: tuple[str, ...]

    @property
    def share_right(self) -> float:
        return self.right / self.rows if self.rows else float("nan")

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "right": self.right,
            "share_right": self.share_right,
            "oom_rows": self.oom_rows,
            "oom_right": self.oom_right,
            "fits_rows": self.rows - self.oom_rows,
            "fits_right": self.right - self.oom_right,
            "mismatches": list(self.mismatches),
        }


def finetune_verdicts(directory: Path) -> FitVerdicts:
    """Every run of the memory file fitted its GPUs; the verdict file adds published OOMs."""
    from rigwise.validation.training_cases import rows as _rows

    published = [(row, "fits") for row in _rows(directory, FILE)]
    published += [(row, row["verdict"]) for row in _rows(directory, VERDICTS)]
    right = oom_rows = oom_right = 0
    mismatches: list[str] = []
    for row, verdict in published:
        plan = plan_row(row)
        ok = plan.fits == (verdict == "fits")
        right += ok
        oom_rows += verdict == "oom"
        oom_right += ok and verdict == "oom"
        if not ok:
            total = plan.memory_per_gpu.total_bytes / 1e9 if plan.memory_per_gpu else float("nan")
            mismatches.append(f"{row['run']}: published {verdict}, predicted {total:.1f} GB")
    return FitVerdicts(len(published), right, oom_rows, oom_right, tuple(mismatches))
