"""The published inference measurements that ``rigwise validate inference`` predicts.

Reads every CSV in a folder (by default the copies kept in ``validation/data/inference``, each
row with its source), recognises the file format by its columns and turns each published figure
into planner options: a ``Measurement``. Rows published as out-of-memory carry ``oom``; rows
that cannot be predicted carry the reason in ``skip``. Every row states its ``role``; a file
without it is refused (``validation.stats.require_roles``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from rigwise.errors import InputError
from rigwise.validation.stats import NOT_MEASUREMENTS, require_roles

_PACKAGE = "rigwise.validation"
_SOURCE_LABELS = {
    "holdout_xiongjiedai": "XiongjieDai README (holdout)",
    "holdout_geerlingguy": "Geerling Raspberry Pi CPU (holdout)",
    "holdout_tensorrt_llm": "TensorRT-LLM H200/B200/RTX PRO (holdout)",
    "holdout_vllm_serving": "vLLM sweeps L4 / RTX 4090 (holdout)",
    "llamacpp_discussion4167": "llama.cpp Apple #4167",
    "llamacpp_discussion15013": "llama.cpp CUDA #15013",
    "xiongjiedai": "XiongjieDai llama.cpp",
    "tensorrt_llm": "TensorRT-LLM",
    "vllm_public_serving": "vLLM public serving posts",
    "transformers_public": "transformers public runs",
    "llamacpp_pr4766": "llama.cpp PR #4766 (Jan 2024 builds)",
    "gpustack_perflab": "GPUStack perf lab vLLM/SGLang H100",
    "cloudrift_server_benchmark": "CloudRift server-benchmark vLLM",
}


@dataclass(frozen=True)
class Measurement:
    source: str
    metric: str  # decode | prefill | serving
    label: str
    options: dict[str, Any]
    measured: float | None  # None for out-of-memory rows
    oom: bool = False
    role: str = "independent"
    skip: str = ""  # why this row is not predicted (empty: predict it)
    # ttft / tpot rows: (share of a wave in phase with the next, prompts, mean|median)
    arrivals: tuple[float, int, str] = (0.0, 0, "")
    # tpot rows of a pure-decode run (arrivals ``decode``): the measured steps carry no prefill
    pure_decode: bool = False


def default_directory() -> Path:
    return Path(str(resources.files(_PACKAGE).joinpath("data", "inference")))


@functools.cache
def _name_map(directory: str) -> dict[tuple[str, str], str | None]:
    path = Path(directory) / "name_map.csv"
    if not path.exists():
        path = default_directory() / "name_map.csv"
    table: dict[tuple[str, str], str | None] = {}
    for row in _rows(path):
        table[(row["kind"], row["published"])] = row["rigwise"] or None
    return table


def _rows(path: Path) -> list[dict[str, str]]:
    from rigwise.catalog.loader import read_commented_csv

    return list(read_commented_csv(path))


class _Names:
    def __init__(self, directory: Path) -> None:
        self.table = _name_map(str(directory))

    def get(self, kind: str, published: str) -> tuple[str | None, str]:
        """(rigwise name or None, skip reason)."""
        if (kind, published) in self.table:
            found = self.table[(kind, published)]
            return found, "" if found else f"{kind} {published!r} not in the catalog"
        if kind == "quant":
            return published, ""
        return None, f"{kind} {published!r} has no entry in name_map.csv"


def _label(source_file: str) -> str:
    stem = Path(source_file).stem
    return next((v for k, v in _SOURCE_LABELS.items() if stem.startswith(k)), stem)


def _hardware(names: _Names, gpu: str, count: int) -> tuple[str | None, str]:
    found, why = names.get("gpu", gpu)
    if found is None:
        return None, why
    return (f"{count}x {found}" if count > 1 else found), ""


def _llama_cpp(
    model: str | None, on: str | None, quant: str, prompt: int, gen: int, **more: Any
) -> dict[str, Any]:
    """The planner options of one llama-bench test (pp: prompt, tg: gen), in one order."""
    return dict(model=model, on=on, quant=quant, engine="llama.cpp", prompt=prompt, gen=gen, **more)


def _read_apple(rows: list[dict[str, str]], names: _Names, source: str) -> Iterator[Measurement]:
    for row in rows:
        on, why_hw = names.get("gpu", f"{row['chip']} {row['gpu_cores']}")
        model, why_model = names.get("model", "LLaMA 2 7B")
        for quant, prefix in (("F16", "f16"), ("Q8_0", "q8_0"), ("Q4_0", "q4_0")):
            for metric, column, prompt, gen in (
                ("prefill", f"{prefix}_pp512_tps", 512, 1),
                ("decode", f"{prefix}_tg128_tps", 1, 128),
            ):
                value = row.get(column, "")
                options = _llama_cpp(model, on, quant, prompt, gen)
                label = f"{row['chip']} {row['gpu_cores']}c {quant} {column.split('_')[-2]}"
                skip = why_hw or why_model or ("not measured (blank)" if not value else "")
                measured = float(value) if value else None
                yield Measurement(
                    source, metric, label, options, measured, role=row["role"], skip=skip
                )


def _read_cuda_scoreboard(
    rows: list[dict[str, str]], names: _Names, source: str
) -> Iterator[Measurement]:
    model, why_model = names.get("model", "LLaMA 2 7B")
    for row in rows:
        on, why_hw = _hardware(names, row["gpu"], int(row["num_gpus"]))
        for metric, column, prompt, gen in (
            ("decode", "tg128_tps_fa0", 1, 128),
            ("prefill", "pp512_tps_fa0", 512, 1),
            ("decode", "tg128_tps_fa1", 1, 128),
            ("prefill", "pp512_tps_fa1", 512, 1),
        ):
            value = row.get(column, "")
            options = _llama_cpp(model, on, row["weight_format"], prompt, gen)
            skip = why_hw or why_model or ("not measured (blank)" if not value else "")
            if column.endswith("fa1") and not skip:
                skip = "flash-attention run: rigwise models llama.cpp's default (fa off)"
            label = f"{row['gpu']} Q4_0 {column}"
            measured = float(value) if value else None
            yield Measurement(source, metric, label, options, measured, role=row["role"], skip=skip)


def _build_source(source: str, row: dict[str, str]) -> str:
    """Runs with December 2023 llama.cpp builds are reported apart: prompt processing got
    2-3x faster in 2024, and rigwise models current builds."""
    return f"{source} Dec 2023 build" if "Dec 2023" in row.get("hardware_section", "") else source


_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def _build_date(engine: str) -> str | None:
    """'llama.cpp (May 2024 build; ...)' -> '2024-05', '(... build 2024-01-12 ...)' ->
    '2024-01-12': the build the row was measured with."""
    exact = re.search(r"build (\d{4}-\d{2}-\d{2})", engine)
    if exact:
        return exact.group(1)
    match = re.search(r"\b([A-Z][a-z]{2})[a-z]* (\d{4}) build", engine)
    if not match or match.group(1).lower() not in _MONTHS:
        return None
    return f"{match.group(2)}-{_MONTHS.index(match.group(1).lower()) + 1:02d}"


def _read_llama_bench(
    rows: list[dict[str, str]], names: _Names, source: str
) -> Iterator[Measurement]:
    for row in rows:
        count = int(row["num_gpus"])
        on, why_hw = _hardware(names, row["gpu"], count)
        model, why_model = names.get("model", row["model"])
        tokens = int(row["n_tokens"])
        decode = row["test_type"] == "text_generation"
        # llama-bench sizes the context to the test: tgN generates N tokens after none.
        prompt, gen = (1, tokens - 1) if decode else (tokens, 1)
        oom = row["oom"].lower() == "true"
        value = row["tokens_per_s"]
        skip = why_hw or why_model
        if not skip and row.get("suspect_outlier"):
            skip = "published as a suspect outlier"
        if not skip and not oom and "Dec 2023" in row["hardware_section"] and count > 1:
            skip = "Dec 2023 multi-GPU run predates llama.cpp's layer split default"
        label = f"{row['gpu']} x{count} {row['model']} {row['weight_format']} {row['test']}"
        options = _llama_cpp(model, on, row["weight_format"], prompt, gen, context=tokens)
        build = _build_date(row.get("engine", ""))
        if build:
            options["engine_build"] = build
        metric = "decode" if decode else "prefill"
        measured = float(value) if value and not oom else None
        yield Measurement(
            _build_source(source, row),
            metric,
            label,
            options,
            measured,
            oom=oom,
            role=row["role"],
            skip=skip,
        )


def _read_trtllm(rows: list[dict[str, str]], names: _Names, source: str) -> Iterator[Measurement]:
    for row in rows:
        gpu, why_hw = names.get("gpu", row["gpu"])
        model, why_model = names.get("model", row["model"])
        quant, _ = names.get("quant", row["weight_precision"])
        count = int(row["num_gpus"])
        options = dict(
            model=model,
            on=f"{count}x {gpu}" if count > 1 else gpu,
            quant=quant,
            engine="tensorrt-llm",
            tp=int(row["tensor_parallel"]),
            pp=int(row["pipeline_parallel"]),
            prompt=int(row["input_len"]),
            gen=int(row["output_len"]),
            concurrency="max",
        )
        label = (
            f"{row['model']} {row['weight_precision']} TP{row['tensor_parallel']} "
            f"{row['input_len']}/{row['output_len']}"
        )
        value = float(row["total_output_throughput_tokens_per_s"])
        skip = why_hw or why_model
        yield Measurement(source, "serving", label, options, value, role=row["role"], skip=skip)


def _readers() -> list[tuple[str, Callable[..., Iterator[Measurement]]]]:
    from rigwise.validation.inference_serving import read_public_serving

    return [
        ("q4_0_tg128_tps", _read_apple),
        ("tg128_tps_fa0", _read_cuda_scoreboard),
        ("total_output_throughput_tokens_per_s", _read_trtllm),
        ("serving_metric", functools.partial(read_public_serving, measurement=Measurement)),
    ]


def load_measurements(directory: Path | None = None) -> tuple[list[Measurement], list[str]]:
    """All measurements in ``directory``, and the names of CSV files no reader knows."""
    folder = Path(directory) if directory else default_directory()
    if not folder.is_dir():
        raise InputError(f"No folder {str(folder)!r}.", hint="Give a folder of measurement CSVs.")
    names = _Names(folder)
    found: list[Measurement] = []
    unknown: list[str] = []
    for path in sorted(folder.glob("*.csv")):
        if path.name in NOT_MEASUREMENTS:
            continue
        rows = _rows(path)
        require_roles(path, rows)
        columns = set(rows[0]) if rows else set()
        source = _label(path.name)
        if {"test_type", "n_tokens", "tokens_per_s"} <= columns:
            found.extend(_read_llama_bench(rows, names, source))
            continue
        reader = next((r for key, r in _readers() if key in columns), None)
        if reader is None:
            unknown.append(path.name)
            continue
        found.extend(reader(rows, names, source))
    return found, unknown
