"""Fine-tuning peak memory per GPU against published runs (``finetune_memory_runs.csv``).

Each row is planned through the public API with every layout flag fixed (so no search moves
it) and the settings the source states; the predicted total per GPU (GiB) is compared with
the measured peak (PyTorch's reserved memory), and the fits/OOM verdict on the device with it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from rigwise.units import GiB as GIB
from rigwise.validation.stats import Comparison

FILE = "finetune_memory_runs.csv"
SOURCE = "fine-tune memory (not in shared/)"


def finetune_memory_cases(directory: Path) -> Iterator[Comparison]:
    from rigwise.api.train import plan_training
    from rigwise.estimate.plan_intervals import training_regime
    from rigwise.validation.training_cases import rows as _rows

    for row in _rows(directory, FILE):
        gpus, mb = int(row["gpus"]), int(row["micro_batch"])
        plan = plan_training(
            model=row["model"],
            on=f"{gpus}x {row['device']}",
            method=row["method"],
            seq=int(row["seq_len"]),
            micro_batch=mb,
            global_batch=mb * gpus,
            tp=1,
            pp=1,
            cp=1,
            ep=1,
            vpp=1,
            dp=gpus,
            sequence_parallel=False,
            zero=int(row["zero"]),
            recompute=row["recompute"],
            pure_bf16=row["pure_bf16"] == "1",
            paged_optimizer=row["paged_optimizer"] == "1",
            lora_rank=int(row["lora_rank"]),
        )
        if plan.memory_per_gpu is None:
            continue
        predicted = plan.memory_per_gpu.total_bytes / GIB
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
