"""Reader for public serving measurements (vLLM / SGLang benchmark posts): one row per metric,
``serving_metric`` one of decode (tokens/s at concurrency 1), serving (output tokens/s), ttft and
tpot (seconds, means as the benchmarks print them). Optional layout columns, read where a file has
them and the row fills them: ``pipeline_parallel`` (pp), ``replicas`` (dp: engine instances behind
one load balancer), ``expert_parallel`` (ep), ``max_num_seqs`` (max_batch) and ``kv_cache_dtype``
(kv_quant), each as the run's command line set it, ``api_server`` (``false`` where the source
drove the engine in-process, with no API server streaming the tokens: planned without its cap)
and ``engine_build`` (the date of the engine build that ran, where the row knows it: its
kernels, ``engine_builds.csv``)."""

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
            gen=_generated_tokens(row),
            concurrency=int(row["concurrency"]),
            **_layout(row),
        )
        label = (
            f"{row['model']} {row['gpu']} TP{row['tensor_parallel']}{_layout_label(row)} "
            f"{row['input_len']}/{row['output_len']} c{row['concurrency']} {metric}"
        )
        skip = why_hw or why_model or ("" if metric in SERVING_METRICS else f"metric {metric}")
        share = in_phase_share(
            row.get("arrivals") or "",
            int(row["output_len"]),
            float(row.get("mean_output_len") or 0.0),
        )
        arrivals = (share, int(row.get("num_prompts") or 0), row.get("statistic") or "")
        yield measurement(
            source,
            metric,
            label,
            options,
            float(row["value"]),
            role=row["role"],
            skip=skip,
            arrivals=arrivals,
            pure_decode=row.get("arrivals") == "decode",
        )


def _generated_tokens(row: dict[str, str]) -> int:
    """Output tokens per request to plan with: the cap asked (``output_len``), except for the
    throughput metrics (serving, tpot) of a row that publishes the run's mean output
    (``mean_output_len``: output tokens / requests of the same table), where the requests that
    stopped at their end-of-sequence token made the run generate fewer tokens than the cap:
    a workload fact, as the run went. TTFT rows keep the cap: ``in_phase_share`` reads the
    mean against it."""
    mean = float(row.get("mean_output_len") or 0.0)
    if mean > 0 and row["serving_metric"] in ("serving", "tpot"):
        return max(1, round(mean))
    return int(row["output_len"])


def _flag(text: str) -> bool:
    """``true`` / ``false`` as the files write them; anything else is a data error."""
    if text.lower() not in ("true", "false"):
        raise ValueError(f"expected true or false, not {text!r}")
    return text.lower() == "true"


_LAYOUT_COLUMNS: tuple[tuple[str, str, Callable[[str], Any]], ...] = (
    ("pipeline_parallel", "pp", int),
    ("replicas", "dp", int),
    ("expert_parallel", "ep", int),
    ("max_num_seqs", "max_batch", int),
    ("kv_cache_dtype", "kv_quant", str),
    ("api_server", "api_server", _flag),
    ("engine_build", "engine_build", str),
)


def _layout(row: dict[str, str]) -> dict[str, Any]:
    """Planner options from the optional layout columns this row fills."""
    return {key: kind(row[column]) for column, key, kind in _LAYOUT_COLUMNS if row.get(column)}


def _layout_label(row: dict[str, str]) -> str:
    """`` PP4 x2 EP4``: the layout beyond TP, so rows of one file stay apart."""
    tags = (("pipeline_parallel", "PP"), ("replicas", "x"), ("expert_parallel", "EP"))
    parts = [f"{tag}{row[col]}" for col, tag in tags if row.get(col) and row[col] != "1"]
    return "".join(f" {part}" for part in parts)


def in_phase_share(arrivals: str, output_len: int, mean_output_len: float) -> float:
    """Share of a closed loop's wave that returns together with the next wave. ``wave``: every
    request runs to the output cap (``--ignore-eos``), so all of it; ``staggered``: the requests
    that stop at their end-of-sequence token return early, out of phase, so the share that runs
    to the cap, taken as the published mean output over the cap (``mean_output_len``: output
    tokens / requests; exact when the others stop at once, an upper bound otherwise); none
    when it is not published (every arrival desynchronised after the first wave). ``decode``:
    a pure-decode run, the batch's prompts already cached (a priming run) entering decode
    together, one wave: its TPOT is the decode step (``validation.inference._predicted``)."""
    if arrivals in ("wave", "decode"):
        return 1.0
    if mean_output_len > 0 and output_len > 0:
        return min(1.0, mean_output_len / output_len)
    return 0.0


def first_wave_share(concurrency: int, prompts: int) -> float:
    """Share of a run's ``prompts`` requests sent in its first wave, all ``concurrency`` clients
    arriving at once into an idle server: min(C, N) / N; none when N is not published."""
    if prompts <= 0:
        return 0.0
    return min(max(1, concurrency), prompts) / prompts


def _wave_weights(concurrency: int, prompts: int, share: float) -> tuple[float, float]:
    """(share of the ``prompts`` requests that arrive in a wave, weight of the wave's excess
    TTFT in their mean), the first wave (``first_wave_share``) left out of the excess: it is
    the burst. Cycle j of a closed loop of C sends min(C, N - jC) requests, of which share^j
    are still in phase; a wave of c requests waits (c - 1) / (C - 1) of the full wave's excess
    over one prompt alone (the prompt tokens ahead grow linearly with c)."""
    if prompts <= 0:
        whole = 1.0 if share >= 1.0 else 0.0
        return whole, whole
    count = excess = 0.0
    for cycle in range(-(-prompts // concurrency)):
        sent = min(concurrency, prompts - cycle * concurrency)
        kept = share**cycle
        count += sent * kept
        if concurrency > 1 and cycle > 0:
            excess += sent * kept * max(0.0, concurrency * kept - 1.0) / (concurrency - 1.0)
    return count / prompts, excess / prompts


def benchmark_ttft_seconds(serving: Any, share: float, prompts: int, statistic: str) -> float:
    """The TTFT a closed-loop benchmark of ``prompts`` requests reports. Its first ``concurrency``
    requests arrive together into an idle server, one each: a burst (request rate inf), whose
    mean is ``ttft_burst_s``, the requests beyond the running batch waiting their turn once,
    not the steady queue of a closed loop; it weighs ``first_wave_share`` in the mean. A
    request that ends returns its slot at once, so the requests that end together come back
    together: with equal lengths each wave returns as a wave (``ttft_wave_s``; cohorts one
    scheduler step apart merge again behind the long prefill steps), and only the requests that
    end early (``share``: ``in_phase_share``) leave it and arrive desynchronised (``ttft_s``).
    The mean weighs each later cycle's in-phase wave by its size (``_wave_weights``); the
    median is the wave's TTFT when more than half the requests arrive in waves, else the
    desynchronised one. ``share`` 0 is the first wave alone, 1 waves only."""
    wave = float(serving.ttft_wave_s or serving.ttft_s)
    alone = float(serving.ttft_s)
    count, excess = _wave_weights(max(1, int(serving.concurrency)), prompts, share)
    if statistic == "median":
        return alone + (1.0 if count > 0.5 else 0.0) * (wave - alone)
    if prompts <= 0:
        return alone + excess * (wave - alone)
    first = first_wave_share(int(serving.concurrency), prompts)
    # one client alone arrives into an idle server every time: its first request is no burst
    burst = float(serving.ttft_burst_s or wave) if serving.concurrency > 1 else alone
    return first * burst + (1.0 - first) * alone + excess * (wave - alone)


def benchmark_tpot_seconds(serving: Any, prompts: int, statistic: str) -> float:
    """The TPOT a closed-loop benchmark of ``prompts`` requests reports: its first wave's
    (``tpot_burst_s``: the burst, where a paged cache preempts the wave's ratio of requests,
    ``serving_preemption``) weighed by ``first_wave_share`` with the steady state's
    (``tpot_s``) in the mean, as in ``benchmark_ttft_seconds``; the median is the first wave's
    when it holds more than half the requests."""
    first = first_wave_share(int(serving.concurrency), prompts)
    if statistic == "median":
        first = 1.0 if first > 0.5 else 0.0
    burst = float(serving.tpot_burst_s or serving.tpot_s)
    return first * burst + (1.0 - first) * float(serving.tpot_s)
