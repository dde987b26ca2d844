"""The random-weight Llama benchmark on CPU, and calibration of the planner against it."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from rigwise.bench import llm
from rigwise.bench.tasks import Device
from rigwise.errors import ProbeError
from rigwise.hardware import get_accelerator
from rigwise.models import load_model

# A CPU platform in the catalog; this machine's CPU stands in for it, so the fractions of peak
# are not this CPU's, but the planner-calibration loop is exercised end to end.
CATALOG_CPU = "ryzen-9-7950x-ddr5-6000"


def test_fit_factor_converges_with_a_fixed_overhead() -> None:
    # speed = 1 / (bytes / (bw * factor) + overhead): not proportional, still converges.
    def predict(calibration: dict[str, float]) -> float:
        return 1.0 / (1.0 / (100.0 * calibration["k"]) + 0.001)

    factor, after = llm.fit_factor("k", 50.0, 0.3, {}, predict)
    assert factor is not None and after == pytest.approx(50.0, rel=0.01)


def test_tiny_cpu_shape_keeps_the_catalog_head_layout() -> None:
    spec = load_model(llm.DEFAULT_CPU_MODEL)
    shape = llm.shape_for(spec, "cpu", None, 4)
    assert shape.num_layers == 2
    assert shape.hidden_size == shape.num_attention_heads * shape.head_dim
    group = spec.num_attention_heads // spec.num_kv_heads
    assert shape.num_attention_heads // shape.num_kv_heads == group


def test_gpu_shape_drops_layers_to_fit() -> None:
    spec = load_model("llama-3.1-8b")
    small = llm.shape_for(spec, "cuda:0", 8e9, 2)
    large = llm.shape_for(spec, "cuda:0", 200e9, 2)
    assert small.num_layers < spec.num_layers
    assert large.num_layers == spec.num_layers
    assert small.hidden_size == spec.hidden_size
    assert 2 * llm.matmul_params(small) <= 0.5 * 8e9 * 1.05


@pytest.mark.slow
@pytest.mark.torch
def test_cpu_llm_benchmark_calibrates_the_planner_within_15_percent() -> None:
    device = Device("cpu", get_accelerator(CATALOG_CPU), CATALOG_CPU)
    outcome = llm.run(device, quick=True, model_name=None, finetune=True)
    found = {m.name: m for m in outcome.measurements}
    assert set(found) == {
        "llm_prefill",
        "llm_decode",
        "llm_peak_memory",
        "finetune_step",
        "finetune_peak_memory",
    }
    decode = found["llm_decode"]
    assert decode.value > 0 and decode.peak is not None and decode.predicted is not None
    after = decode.details["predicted_after_calibration"]
    assert after == pytest.approx(decode.value, rel=0.15)
    assert found["llm_prefill"].details["predicted_after_calibration"] == pytest.approx(
        found["llm_prefill"].value, rel=0.15
    )
    assert found["finetune_step"].value > 0 and found["finetune_peak_memory"].value > 0


def test_without_torch_the_llm_benchmark_is_a_skip_saying_how_to_add_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rigwise.bench import torch_adapter

    monkeypatch.setattr(torch_adapter, "load_torch", lambda: (None, "PyTorch is not installed"))
    device = Device("cpu", get_accelerator(CATALOG_CPU), CATALOG_CPU)
    outcome = llm.run(device, quick=True, model_name=None, finetune=False)
    assert not outcome.measurements
    assert "pip install 'rigwise[torch]'" in outcome.skipped[0].reason


def test_missing_model_is_a_skip_with_a_reason() -> None:
    device = Device("cpu", None, "cpu")
    outcome = llm.run(device, quick=True, model_name="no-such-model-xyz", finetune=False)
    assert outcome.measurements == []
    assert "no-such-model-xyz" in outcome.skipped[0].reason


def test_shape_replace_is_frozen() -> None:
    spec = load_model(llm.DEFAULT_CPU_MODEL)
    shape = llm.shape_for(spec, "cpu", None, 4)
    assert replace(shape, num_layers=1).num_layers == 1


def test_a_leftover_torch_folder_is_not_taken_for_pytorch(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # `pip uninstall torch` leaves a `torch/` folder when bytecode was written into it; it imports
    # as a namespace package (no __file__), which must read as "not installed", not fail later.
    import types

    from rigwise.bench import torch_adapter

    leftover = types.ModuleType("torch")
    leftover.__path__ = [str(tmp_path / "torch")]
    monkeypatch.setitem(sys.modules, "torch", leftover)
    torch, reason = torch_adapter.load_torch()
    assert torch is None
    assert reason is not None and str(tmp_path / "torch") in reason
    with pytest.raises(ProbeError, match="pip install"):
        torch_adapter.require_torch()
