"""Cases from framework benchmark tables: torchtitan (Llama 3.1 on H100/H200), MosaicML
llm-foundry (MPT on A100 with FSDP), and the holdout runs found outside shared/."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rigwise.estimate.compute import training_factors
from rigwise.estimate.training_layout import Layout, Workload
from rigwise.validation.stats import Comparison
from rigwise.validation.training_cases import assumptions as _assumptions
from rigwise.validation.training_cases import case, fabric, gpt_spec, predict, predicted_memory_gib
from rigwise.validation.training_cases import rows as _rows

TORCHTITAN = "torchtitan_llama3_training_benchmarks.csv"
LLMFOUNDRY = "mosaicml_llmfoundry_mpt_training_benchmarks.csv"


def _model(name: str) -> Any:
    from rigwise.models import load_model

    return load_model(name)


def _float8_scaling(techniques: str) -> str:
    """torchao recipe named in the techniques column: rowwise, mxfp8 (mxfp8_cublas[_rceil])
    or tensorwise (the default Float8 recipe)."""
    if "rowwise" in techniques:
        return "rowwise"
    return "mxfp8" if "mxfp8" in techniques else "tensorwise"


def _torchtitan_setup(
    row: dict[str, str], assume: dict[tuple[str, str], str]
) -> tuple[Workload, Layout]:
    techniques = row["techniques"].lower()
    fsdp, tp, pp = (
        int(row["fsdp_degree"]),
        int(row["tensor_parallel"]),
        int(row["pipeline_parallel"]),
    )
    cp = int(row["context_parallel"])
    seq = int(row["seq_len"] or assume.get((TORCHTITAN, "seq_len"), "8192"))
    local = int(row["local_batch_size"])
    fp8 = ("float8" in techniques or "mxfp8" in techniques) and "none (bfloat16)" not in techniques
    checkpointing = row["activation_checkpointing"].lower()
    recompute = "full" if checkpointing == "full" else "selective"
    work = Workload(
        seq_len=seq,
        global_batch=local * fsdp,
        precision="fp8" if fp8 else "bf16",
        fused_kernels="compile" in techniques,
        async_tp="async tp" in techniques or "asynctp" in techniques,
        # torchtitan's selective AC of the llama3 configs is per-op SAC (selective_ac_option "op").
        selective_policy=assume.get((TORCHTITAN, "selective_policy"), "op"),
        float8_scaling=_float8_scaling(techniques),
        compiled_loss=row.get("loss") == "compiled",  # torchtitan from 2025-04 (CSV header)
        chunked_loss=row.get("loss") == "chunked",  # ChunkedCELoss: no full logits tensor
        # tok_embeddings in an FSDP unit of its own (torchtitan PR #1094; CSV header)
        embedding_own_unit=row.get("embedding_unit") == "own",
        # cuDNN attention on B200, missing from per-op SAC's save list (mid-2025; CSV header)
        sac_saves_attention=row.get("sac_attention") != "recomputed",
        torch_fsdp=True,  # FSDP2 fully_shard over an fp32 model with a bf16 MixedPrecisionPolicy
    )
    microbatches = int(assume.get((TORCHTITAN, "pp_microbatches"), "0")) or pp
    mb = max(local // microbatches, 1) if pp > 1 else local
    vpp = 2 if "interleaved" in techniques else 1
    layout = Layout(
        tp=tp,
        pp=pp,
        dp=fsdp,
        cp=cp,
        vpp=vpp,
        micro_batch=mb,
        global_batch=local * fsdp,
        zero=3,
        recompute=recompute,
        sequence_parallel=tp > 1,
    )
    return work, layout


def _torchtitan_fabric(row: dict[str, str], assume: dict[tuple[str, str], str]) -> Any:
    """The device a row ran on: Meta's Grand Teton H100 (96 GB HBM2e at 2.4 TB/s, capped at
    500 W, per the table headers) unless the hardware column names an H200 (catalog specs) or
    a B200 (catalog specs; a "power limited" one at Meta's B200 cap, assumptions.csv)."""
    hardware = row["hardware"].lower()
    if "h200" in hardware:
        return fabric("h200-sxm", 8, "roce-400", 8)
    if "b200" in hardware:
        capped = "power limited" in hardware
        limit = float(assume.get((TORCHTITAN, "b200_power_limit_w"), "0")) if capped else 0.0
        return fabric("b200", 8, "roce-400", 8, power_limit=limit or None)
    memory = float(assume.get((TORCHTITAN, "memory_gib"), "96"))
    bandwidth = float(assume.get((TORCHTITAN, "memory_bandwidth_gb_s"), "0"))
    return fabric("h100-sxm", 8, "roce-400", 8, memory, 500.0, bandwidth)


def _torchtitan_source(table: str) -> str:
    """Per-source statistics keep the torchao README rows and the B200 rows apart."""
    if table.startswith("torchao"):
        return "torchao float8 H100"
    if "autoresearch" in table:
        return "torchtitan autoresearch B200"
    return "torchtitan B200" if "B200" in table else "torchtitan"


def torchtitan_cases(directory: Path) -> Iterator[Comparison]:
    assume = _assumptions(directory)
    for row in _rows(directory, TORCHTITAN):
        fab = _torchtitan_fabric(row, assume)
        device = fab.accelerator.id
        spec = _model(row["model"].lower().replace(" ", "-").replace("llama-3.1", "llama-3.1"))
        work, layout = _torchtitan_setup(row, assume)
        ev = predict(spec, work, layout, fab)
        label = f"{row['table']}: {row['model']} {row['num_gpus']} GPUs {row['techniques']}"
        per_gpu = float(ev.tokens_per_s[0]) / layout.gpus
        measured = float(row["tokens_per_s_per_gpu"])
        metric = "tokens_per_s_per_gpu"
        group = f"{device} torchtitan {row['table']}"  # held-out coverage leaves a table out
        source = _torchtitan_source(row["table"])
        yield case(source, label, metric, measured, per_gpu, row["role"], fab, layout.gpus, group)
        if row["peak_memory_gib"]:
            m = ev.memory
            tensors = float(m.weights[0] + m.gradients[0] + m.optimizer[0] + m.activations[0])
            total = float(m.total[0])
            reserved = total - float(m.outside_allocator[0])
            yield case(
                source,
                label,
                "memory_gib",
                float(row["peak_memory_gib"]),
                predicted_memory_gib(row["memory_quantity"], tensors, reserved, total),
                row["memory_role"],  # no memory factor was fitted on these rows
                fab,
                layout.gpus,
                group,
            )


def _mpt_spec(row: dict[str, str]) -> Any:
    base = _model(f"mpt-bench-{row['model']}")
    params = int(row["num_params"])
    positions = params - (base.params_total - base.params_positions)
    return dataclasses.replace(
        base, params_total=params, params_active=params, params_positions=max(positions, 0)
    )


def llmfoundry_cases(directory: Path) -> Iterator[Comparison]:
    for row in _rows(directory, LLMFOUNDRY):
        gpus = int(row["num_gpus"])
        per_node = min(gpus, 8)
        memory = 40 if "40gb" in row["gpu"] else 80
        fab = fabric(f"a100-sxm-{memory}gb", per_node, "roce-200" if gpus > 8 else None, 8)
        mb, accum = int(row["micro_batch_size"]), int(row["grad_accum"])
        work = Workload(
            seq_len=int(row["seq_len"]), global_batch=mb * accum * gpus, fused_kernels=False
        )
        recompute = "full" if row["activation_checkpointing"] == "True" else "none"
        layout = Layout(
            dp=gpus, micro_batch=mb, global_batch=mb * accum * gpus, zero=3, recompute=recompute
        )
        ev = predict(_mpt_spec(row), work, layout, fab)
        label = f"MPT {row['model']} seq {row['seq_len']} {gpus}x A100-{memory}GB mb {mb}"
        predicted = float(ev.tokens_per_s[0]) / gpus
        yield case(
            "llm-foundry A100",
            label,
            "tokens_per_s_per_gpu",
            float(row["throughput_tokens_per_s_per_gpu"]),
            predicted,
            row["role"],
            fab,
            gpus,
        )


def holdout_cases(directory: Path) -> Iterator[Comparison]:
    """Published runs not in shared/: ``holdout_training_runs.csv`` (one run per row)."""
    for row in _rows(directory, "holdout_training_runs.csv"):
        spec = (
            gpt_spec(
                int(row["hidden"]),
                int(row["heads"]),
                int(row["layers"]),
                int(row["vocab"]),
                int(row["seq_len"]),
                row["run"],
            )
            if row["model"] == "gpt"
            else _model(row["model"])
        )
        per_node = int(row["gpus_per_node"])
        fab = fabric(row["device"], per_node, row["network"] or None, int(row["network_ports"]))
        gpus = int(row["num_gpus"])
        tp, pp, cp = int(row["tp"]), int(row["pp"]), int(row["cp"] or 1)
        batch = int(row["global_batch"])
        work = Workload(
            seq_len=int(row["seq_len"]),
            global_batch=batch,
            precision=row["precision"],
            flash_attention=row["flash_attention"] == "1",
            dropout=row["model"] == "gpt",
            overlap_grad_reduce=row["overlap_grad_reduce"] == "1",
        )
        layout = Layout(
            tp=tp,
            pp=pp,
            dp=gpus // (tp * pp * cp),
            cp=cp,
            vpp=int(row["vpp"] or 1),
            micro_batch=int(row["micro_batch"]),
            global_batch=batch,
            zero=int(row["zero"]),
            recompute=row["recompute"],
            sequence_parallel=row["sequence_parallel"] == "1",
        )
        ev = predict(spec, work, layout, fab)
        quantity, measured = row["quantity"], float(row["value"])
        if quantity == "gpu_hours":
            # A whole run: productive time over the goodput (restarts, failures, checkpoints).
            goodput = training_factors(fab.accelerator.id).goodput
            hours = float(row["tokens"]) / float(ev.tokens_per_s[0]) * gpus / 3600.0
            predicted = hours / goodput
        elif quantity == "hardware_tflops_per_gpu":
            predicted = float(ev.hfu[0] * ev.peak_flops) / 1e12
        else:
            predicted = float(ev.model_flops_per_gpu[0]) / 1e12
        source = "holdout (not in shared/)"
        yield case(source, row["run"], quantity, measured, predicted, row["role"], fab, gpus)
