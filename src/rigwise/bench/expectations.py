"""What the catalog and rigwise's own models expect of a device, for each bench figure.

Peaks come from the matched catalog ``Accelerator``; predictions are the peak times the
catalog's efficiency factor (efficiency_training.csv) or the inference planner's figure. All
lookups degrade to ``None`` (with a reason) when the catalog, the planner or the device entry
is missing, so a bench never fails for want of an expectation.
"""

from __future__ import annotations

import atexit
import fnmatch
import json
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rigwise.catalog.loader import read_csv
from rigwise.errors import RigwiseError
from rigwise.probe.matching import find_accelerator

EFFICIENCY_FILE = "efficiency_training.csv"
# The bench's model runs eagerly in plain PyTorch, which the planner knows as this engine.
BENCH_ENGINE = "transformers"


def peak_flops(accelerator: Any | None, dtype: str) -> float | None:
    if accelerator is None:
        return None
    value = getattr(accelerator, "flops", {}).get(dtype)
    return float(value) if value else None


def peak_bandwidth(accelerator: Any | None) -> float | None:
    value = getattr(accelerator, "memory_bandwidth_bytes_per_s", None)
    return float(value) if value else None


def pcie_link(gen: int | None, width: int | None) -> Any | None:
    """The catalog interconnect for a PCIe generation and width (``pcie4-x16``), or None."""
    if not gen or not width:
        return None
    try:
        from rigwise.hardware import get_link

        return get_link(f"pcie{gen}-x{width}")
    except (ImportError, RigwiseError, LookupError):
        return None


def cpu_accelerator(cpu_model: str) -> Any | None:
    """The catalog row for this CPU platform, only if the catalog has it as a CPU."""
    accelerator = find_accelerator(cpu_model)
    return accelerator if getattr(accelerator, "kind", None) == "cpu" else None


def _specificity(pattern: str) -> tuple[int, int]:
    return (0 if any(c in pattern for c in "*?[") else 1, len(pattern.split("*")[0]))


def catalog_factor(factor: str, accelerator_id: str | None) -> float | None:
    """Most specific ``factor`` row whose ``applies_to`` glob matches the accelerator id."""
    if accelerator_id is None:
        return None
    try:
        rows = read_csv(EFFICIENCY_FILE)
    except RigwiseError:
        return None
    matches = [
        row
        for row in rows
        if row.get("factor") == factor
        and fnmatch.fnmatch(accelerator_id, row.get("applies_to", ""))
    ]
    if not matches:
        return None
    best = max(matches, key=lambda row: _specificity(row["applies_to"]))
    return float(best["value"])


def expected(
    factor: str,
    peak: float | None,
    accelerator_id: str | None,
    calibration: Mapping[str, float],
) -> float | None:
    """Peak x efficiency: this machine's calibrated factor if any, else the catalog's."""
    if peak is None:
        return None
    efficiency = calibration.get(factor) or catalog_factor(factor, accelerator_id)
    return peak * efficiency if efficiency else None


def bench_model(name: str) -> tuple[Any | None, str | None]:
    """The catalog ModelSpec the LLM benchmark is shaped after, or (None, why not)."""
    from rigwise.models import load_model

    try:
        return load_model(name), None
    except RigwiseError as exc:
        return None, str(exc)


def write_hf_config(shape: Any, directory: str | None = None) -> Path:
    """An HF ``config.json`` for the benchmark's (shrunk) Llama, so the planner can read it."""
    if directory is None:
        # The planner re-reads it for every calibration it compares, until the run ends: the
        # folder goes when the process exits, so no /tmp/rigwise-* is left behind.
        directory = tempfile.mkdtemp(prefix="rigwise-bench-model-")
        atexit.register(shutil.rmtree, directory, True)
    folder = Path(directory)
    config = {
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": shape.hidden_size,
        "intermediate_size": shape.intermediate_size,
        "num_hidden_layers": shape.num_layers,
        "num_attention_heads": shape.num_attention_heads,
        "num_key_value_heads": shape.num_kv_heads,
        "head_dim": shape.head_dim,
        "vocab_size": shape.vocab_size,
        "max_position_embeddings": 8192,
        "tie_word_embeddings": False,
        "rms_norm_eps": shape.rms_norm_eps,
        "rope_theta": shape.rope_theta,
        "hidden_act": "silu",
    }
    path = folder / "config.json"
    path.write_text(json.dumps(config, indent=2), encoding="utf-8")
    return path


def predict_llm(
    config_path: Path,
    accelerator_id: str | None,
    quant: str,
    prompt: int,
    gen: int,
    calibration: Mapping[str, float] | None,
) -> tuple[float | None, float | None, str | None]:
    """(prefill tok/s, decode tok/s, why not) from the inference planner."""
    if accelerator_id is None:
        return None, None, "device not in the catalog"
    from rigwise.api.infer import plan_inference

    try:
        plan = plan_inference(
            model=str(config_path),
            on=accelerator_id,
            quant=quant,
            prompt=prompt,
            gen=gen,
            calibration=dict(calibration) if calibration else None,
            engine=BENCH_ENGINE,
            levers=False,
        )
        if plan.prefill is None or plan.decode is None:
            return None, None, f"the planner finds it infeasible ({getattr(plan, 'reason', '')})"
        prefill = float(plan.prefill.tokens_per_s)
        decode = float(plan.decode.tokens_per_s)
    except (RigwiseError, AttributeError, TypeError, ValueError) as exc:
        return None, None, f"the planner could not answer ({exc})"
    return prefill, decode, None
