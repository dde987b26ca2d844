"""The LLM benchmark: a Llama-architecture model from a catalog config, random weights.

On a GPU the model keeps the catalog model's width and loses layers until it fits (about half
the free memory for inference); on a CPU it is a tiny model with the catalog model's head
layout. Measured prefill/decode speeds are set next to the roofline peak (weights / memory
bandwidth for decode, 2 x parameters FLOPs per token for prefill; Kaplan et al. 2020, eq. 2.1)
and the inference planner's prediction. The measured efficiencies are then fitted so that the
planner, given them as ``calibration``, reproduces the measurement.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from rigwise.bench import expectations as expect
from rigwise.bench.result import Measurement
from rigwise.bench.tasks import Device, Outcome

DEFAULT_GPU_MODEL = "llama-3.1-8b"
DEFAULT_CPU_MODEL = "llama-3.2-1b"
_TINY_HIDDEN = 256
_TINY_VOCAB = 32000
_FIT_ROUNDS = 4


def shape_for(spec: Any, device: str, free_bytes: float | None, bytes_per_param: int) -> Any:
    from rigwise.bench.torch_llm import LlamaShape

    head_dim = int(spec.head_dim)
    shape = LlamaShape(
        hidden_size=int(spec.hidden_size),
        intermediate_size=int(spec.intermediate_size),
        num_layers=int(spec.num_layers),
        num_attention_heads=int(spec.num_attention_heads),
        num_kv_heads=int(spec.num_kv_heads),
        head_dim=head_dim,
        vocab_size=int(spec.vocab_size),
    )
    if device == "cpu":
        head_dim = min(head_dim, 64)
        heads = _TINY_HIDDEN // head_dim
        group = max(1, shape.num_attention_heads // max(1, shape.num_kv_heads))
        ratio = shape.intermediate_size / shape.hidden_size
        return replace(
            shape,
            hidden_size=_TINY_HIDDEN,
            intermediate_size=int(round(_TINY_HIDDEN * ratio / 64) * 64),
            num_layers=2,
            num_attention_heads=heads,
            num_kv_heads=max(1, heads // group),
            head_dim=head_dim,
            vocab_size=min(shape.vocab_size, _TINY_VOCAB),
        )
    budget = 0.5 * (free_bytes or 0.0)
    layers = int(
        (budget / bytes_per_param - 2 * shape.vocab_size * shape.hidden_size)
        // _layer_params(shape)
    )
    return replace(shape, num_layers=max(1, min(shape.num_layers, layers)))


def _layer_params(shape: Any) -> int:
    h, d = shape.hidden_size, shape.head_dim
    attention = h * d * (2 * shape.num_attention_heads + 2 * shape.num_kv_heads)
    return attention + 3 * h * shape.intermediate_size


def matmul_params(shape: Any) -> int:
    """Parameters a token multiplies through: every layer plus the output head."""
    return shape.num_layers * _layer_params(shape) + shape.hidden_size * shape.vocab_size


def fit_factor(
    key: str,
    measured: float,
    start: float,
    calibration: Mapping[str, float],
    predict: Callable[[Mapping[str, float] | None], float | None],
) -> tuple[float | None, float | None]:
    """(factor, prediction with it): scale ``key`` until the planner predicts ``measured``.

    The planner's speed is (close to) proportional to the factor, plus fixed overheads, so a
    few multiplicative rounds converge."""
    factor = start
    prediction = None
    for _ in range(_FIT_ROUNDS):
        prediction = predict({**calibration, key: factor})
        if not prediction:
            return None, None
        factor *= measured / prediction
    prediction = predict({**calibration, key: factor})
    return factor, prediction


def run(device: Device, quick: bool, model_name: str | None, finetune: bool) -> Outcome:
    from rigwise.bench import torch_adapter as ta
    from rigwise.bench import torch_llm

    outcome = Outcome()
    name = model_name or (DEFAULT_CPU_MODEL if device.name == "cpu" else DEFAULT_GPU_MODEL)
    spec, why = expect.bench_model(name)
    if spec is None:
        outcome.skip(f"llm@{device.name}", f"cannot load model {name!r}: {why}")
        return outcome
    if ta.load_torch()[0] is None:
        outcome.skip(
            f"llm@{device.name}",
            "the LLM benchmark needs PyTorch: pip install 'rigwise[torch]' (or torch), then run "
            "`rigwise bench --only llm` to add it",
        )
        return outcome
    dtype = "fp32" if device.name == "cpu" else "bf16"
    bytes_per_param = 4 if dtype == "fp32" else 2
    free = None if device.name == "cpu" else ta.free_device_memory(device.name)
    shape = shape_for(spec, device.name, free, bytes_per_param)
    prompt, gen = (
        (128, 16) if device.name == "cpu" and quick else (512, 64) if quick else (2048, 128)
    )
    result = torch_llm.llm_inference(shape, device.name, dtype, prompt, gen)
    details = {
        "model": name,
        "layers": shape.num_layers,
        "hidden_size": shape.hidden_size,
        "vocab_size": shape.vocab_size,
        "dtype": dtype,
        "weight_bytes": result.weight_bytes,
        "prompt_tokens": prompt,
        "generated_tokens": gen,
    }
    outcome.measurements.extend(_inference_measurements(device, shape, dtype, result, details))
    outcome.measurements.append(
        Measurement("llm_peak_memory", device.name, result.peak_memory_bytes, "B", details=details)
    )
    if finetune:
        outcome.measurements.extend(_finetune_measurements(device, shape, dtype))
    return outcome


def _finetune_measurements(device: Device, shape: Any, dtype: str) -> list[Measurement]:
    """One fine-tuning step of a quarter of the model's layers: its time and peak memory."""
    from rigwise.bench import torch_llm

    seq = 128 if device.name == "cpu" else 1024
    tune = replace(shape, num_layers=max(1, shape.num_layers // 4))  # grads + AdamW states
    step = torch_llm.finetune_step(tune, device.name, dtype, batch=1, seq=seq)
    peak_flops = expect.peak_flops(device.accelerator, "bf16" if dtype == "bf16" else "fp32")
    # Training FLOPs per token = 6 x parameters (Kaplan et al. 2020, Section 2.1).
    floor = 6 * matmul_params(tune) * step.tokens / peak_flops if peak_flops else None
    tune_details = {"layers": tune.num_layers, "tokens": step.tokens, "dtype": dtype}
    return [
        Measurement(
            "finetune_step", device.name, step.step_seconds, "s", floor, None, tune_details
        ),
        Measurement(
            "finetune_peak_memory", device.name, step.peak_memory_bytes, "B", details=tune_details
        ),
    ]


def _inference_measurements(
    device: Device, shape: Any, dtype: str, result: Any, details: dict[str, Any]
) -> list[Measurement]:
    bandwidth = expect.peak_bandwidth(device.accelerator)
    flops = expect.peak_flops(device.accelerator, dtype)
    config = expect.write_hf_config(shape)
    quant = "fp32" if dtype == "fp32" else "bf16"

    def planner(phase: int) -> Callable[[Mapping[str, float] | None], float | None]:
        def predict(calibration: Mapping[str, float] | None) -> float | None:
            answer = expect.predict_llm(
                config,
                device.catalog_id,
                quant,
                result.prompt_tokens,
                result.generated_tokens,
                calibration,
            )
            value = answer[phase]
            return value if isinstance(value, float) else None

        return predict

    why = expect.predict_llm(
        config, device.catalog_id, quant, result.prompt_tokens, result.generated_tokens, None
    )[2]
    phases = (
        (
            "llm_prefill",
            result.prefill_tokens_per_s,
            "prefill_compute_efficiency",
            flops / (2 * matmul_params(shape)) if flops else None,
            planner(0),
        ),
        (
            "llm_decode",
            result.decode_tokens_per_s,
            "decode_bandwidth_efficiency",
            bandwidth / result.weight_bytes if bandwidth else None,
            planner(1),
        ),
    )
    found = []
    for name, value, key, peak, predict in phases:
        predicted = predict(device.calibration or None)
        start = value / peak if peak else None
        extra: dict[str, Any] = {"roofline_efficiency": start}
        if why:
            extra["prediction_unavailable"] = why
        if start is not None and predicted is not None:
            factor, after = fit_factor(key, value, start, dict(device.calibration), predict)
            extra.update({"fitted_efficiency": factor, "predicted_after_calibration": after})
        elif start is not None:
            extra["fitted_efficiency"] = start  # no planner: the roofline ratio is the factor
        found.append(
            Measurement(name, device.name, value, "tokens/s", peak, predicted, {**details, **extra})
        )
    return found
