"""Reader for public serving measurements (vLLM / SGLang benchmark posts): one row per metric,
``serving_metric`` one of decode (tokens/s at concurrency 1), serving (output tokens/s), ttft and
tpot (seconds, means as the benchmarks print them)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

SERVING_METRICS = ("decode", "prefill", "serving", "ttft", "tpot")


def read_public_serving(
    rows: list[dict[str, str]], names: Any, source: str, measurement: Callable[..., Any]
) -> Iterator[Any]:
    """One ``measurement`` (``validation.inference.Measurement``, passed in: that module reads
    this one) per row."""
    for row in rows:
        gpu, why_hw = names.get("gpu", row["gpu"])
        model, why_model = names.get("model", row["model"])
        quant, _ = names.get("quant", row["weight_precision"])
        count = int(row["num_gpus"])
        metric = row["serving_metric"]
        options = dict(
            model=model,
            on=f"{count}x {gpu}" if count > 1 else gpu,
            quant=quant or row["weight_precision"],
            engine=row["engine"],
            tp=int(row["tensor_parallel"]),
            prompt=int(row["input_len"]),
            gen=int(row["output_len"]),
            concurrency=int(row["concurrency"]),
        )
        label = (
            f"{row['model']} {row['gpu']} TP{row['tensor_parallel']} {row['input_len']}/"
            f"{row['output_len']} c{row['concurrency']} {metric}"
        )
        skip = why_hw or why_model or ("" if metric in SERVING_METRICS else f"metric {metric}")
        arrivals = (
            row.get("arrivals") or "",
            int(row.get("num_prompts") or 0),
            row.get("statistic") or "",
        )
        yield measurement(
            source,
            metric,
            label,
            options,
            float(row["value"]),
            role=row["role"],
            skip=skip,
            arrivals=arrivals,
        )


def benchmark_ttft_seconds(serving: Any, arrivals: str, prompts: int, statistic: str) -> float:
    """The TTFT a closed-loop benchmark of ``prompts`` requests reports. ``wave``: every request
    has the same length (``--ignore-eos``) or all arrive at once, so each batch arrives together
    (``ttft_wave_s``); ``staggered``: lengths vary and arrivals desynchronise after the first
    wave (``ttft_s``). The mean of a staggered run still holds its first wave: ``concurrency``
    of the ``prompts`` requests arrive together, so mean = (C/N) wave + (1 - C/N) staggered;
    the median is the staggered figure once N > 2C. A wave of no more prompts than clients is
    one burst (request rate inf, one request each): its mean is ``ttft_burst_s``, the requests
    beyond the running batch waiting their turn once, not the steady queue of a closed loop."""
    if arrivals == "wave" and prompts and prompts <= serving.concurrency and statistic == "mean":
        return float(serving.ttft_burst_s or serving.ttft_wave_s or serving.ttft_s)
    if arrivals == "wave":
        return float(serving.ttft_wave_s or serving.ttft_s)
    first = min(1.0, serving.concurrency / prompts) if prompts and statistic == "mean" else 0.0
    return float(first * serving.ttft_wave_s + (1.0 - first) * serving.ttft_s)
