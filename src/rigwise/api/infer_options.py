"""``InferOptions``: the options of ``rigwise infer`` and ``plan_inference``, one field each.

Typed and frozen, checked where they are made (``rigwise.option_fields``: well-typed values
without pydantic, anything else by pydantic with pydantic's messages) and shared by the CLI,
``--queries``, the web API (its query parameters) and the build designer; each field is
documented where it is declared, so adding an option is one field and its docstring line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rigwise.errors import InputError
from rigwise.estimate.engine_builds import normalise_build
from rigwise.hardware.nodes import MAX_DEVICES
from rigwise.option_fields import check, option, parse
from rigwise.units import parse_seconds, whole_count

ENGINES = ("llama.cpp", "vllm", "sglang", "tensorrt-llm", "transformers", "mlx", "ollama")
MAX_CONTEXT_TOKENS = 100_000_000  # prompt, gen and context: 10^8 tokens, ~10x the longest models


def _count(value: object) -> object:
    return whole_count(value, "512 or 8k") if isinstance(value, str) else value


def _concurrency(value: object) -> object:
    bounds = f"must be a whole number between 1 and {MAX_DEVICES:,} (or 'max')"
    if isinstance(value, str) and value != "max":
        try:
            value = whole_count(value, "64")
        except ValueError:
            raise ValueError(bounds) from None
    if isinstance(value, int) and not 1 <= value <= MAX_DEVICES:
        raise ValueError(bounds)
    return value


def _budget(value: str | None) -> str | None:
    """A latency budget must read as a duration, checked here: the plan reads it only when the
    model fits, so 'abc' passed unseen on a plan that does not. (0 is a budget every plan
    misses: a result, as tests/cli/test_cli_fuzz.py has it.)"""
    if value is not None:
        try:
            parse_seconds(value)
        except InputError:
            raise ValueError("must be a duration, e.g. 200ms") from None
    return value


def _build(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return normalise_build(value)
    except InputError as exc:
        raise ValueError(str(exc)) from None


def _engine(value: str | None) -> str | None:
    if value is None:
        return None
    name = value.lower().replace("llamacpp", "llama.cpp").replace("trt-llm", "tensorrt-llm")
    if name not in ENGINES:
        from rigwise.errors import UnknownNameError, closest

        raise UnknownNameError("engine", value, closest(name, ENGINES))
    return name


@dataclass(frozen=True, kw_only=True)
class InferOptions:
    """The options of ``rigwise infer`` (long option names with ``_``); unknown keys are an
    error naming the key. Counts accept '8k'-style strings."""

    model: str
    """Catalog name, HF config.json or .gguf file."""
    on: str | None = None
    """One node: 'rtx-4090', '2x rtx-3090+nvlink', 'dgx-h100', a CPU platform."""
    nodes: int = option(1, ge=1, le=100_000)
    """Number of such nodes (with ``network``)."""
    network: str | None = None
    """Link between nodes: 10gbe, ib-ndr, thunderbolt-4 ..."""
    cluster: str | None = None
    """Heterogeneous cluster YAML file (instead of ``on``)."""
    quant: str | None = None
    """Weights format: Q4_K_M, Q8_0, BF16, FP8, AWQ-4bit-g128, NF4, MXFP4 ... (engine default)."""
    kv_quant: str | None = None
    """KV cache dtype: f16, bf16, fp8, q8_0, q4_0, q4_1, q5_0, f32 (engine default)."""
    prompt: int = option(512, ge=1, le=MAX_CONTEXT_TOKENS, before=_count)
    """Prompt tokens."""
    gen: int = option(128, ge=1, le=MAX_CONTEXT_TOKENS, before=_count)
    """Generated tokens."""
    context: int | None = option(None, ge=1, le=MAX_CONTEXT_TOKENS, before=_count)
    """Context to reserve (default: prompt + gen, or the engine's own default)."""
    concurrency: int | Literal["max"] = option(1, before=_concurrency)
    """Concurrent requests, or 'max' (as many as the KV cache holds)."""
    engine: str | None = option(None, after=_engine)
    """llama.cpp, vllm, sglang, tensorrt-llm, transformers, mlx, ollama (default by hardware)."""
    offload: Literal["auto", "none"] | None = None
    """'auto': weights that do not fit go to host RAM (default: the engine's; Ollama: auto)."""
    host: str | None = None
    """Host CPU platform (catalog CPU row) whose RAM takes offloaded weights."""
    split: Literal["layer", "tensor"] | None = None
    """How devices share the model (default by engine)."""
    tp: int | None = option(None, ge=1, le=MAX_DEVICES)
    """Tensor-parallel size."""
    pp: int | None = option(None, ge=1, le=MAX_DEVICES)
    """Pipeline stages."""
    dp: int = option(1, ge=1, le=MAX_DEVICES)
    """Replicas of the tp x pp layout."""
    ep: int = option(1, ge=1, le=MAX_DEVICES)
    """Expert-parallel ranks within tp (MoE)."""
    attention_dp: int = option(1, ge=1, le=MAX_DEVICES)
    """Attention data-parallel ranks within tp."""
    max_batch: int | None = option(None, ge=1, le=1_000_000)
    """Running sequences per replica (default: the engine's)."""
    disagg: dict[str, dict[str, int]] | None = None
    """Disaggregated pools: {"prefill": {...}, "decode": {...}} (tp, pp, workers, ep ...)."""
    latency_budget: str | None = option(None, after=_budget)
    """Per-token / first-token budget, e.g. '200ms'."""
    power_limit: float | None = option(None, gt=0)
    """Board power cap per device, watts (speed kept, watts and J/token in ``power``)."""
    calibration: dict[str, float] | None = None
    """Measured efficiency factors (``rigwise bench``) replacing the catalog's."""
    engine_build: str | None = option(None, after=_build)
    """Date of an older engine build, YYYY-MM[-DD], to plan with its kernels (default: current)."""
    api_server: bool = True
    """False: the engine is driven in-process (vLLM's offline ``LLM`` class, a benchmark script),
    no API server streams the tokens: its per-token cap (``engine_overheads.csv``
    ``frontend_token_us``) does not apply."""
    levers: bool = True
    """Also measure the levers (changes that make it fit or run faster)."""

    def __post_init__(self) -> None:
        check(self)

    @classmethod
    def model_validate(cls, data: object) -> InferOptions:
        """Options from a mapping of their fields (as a pydantic model's ``model_validate``);
        bad values raise pydantic's ``ValidationError``."""
        options: InferOptions = parse(cls, data)
        return options


__all__ = ["ENGINES", "MAX_CONTEXT_TOKENS", "InferOptions"]
