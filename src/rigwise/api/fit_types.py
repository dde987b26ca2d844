"""What ``fit_models`` answers (``FitReport``: a ``ModelFit`` per catalog model) and its options
(``FitOptions``, shared by ``rigwise fit`` and ``/api/fit``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from rigwise.option_fields import no_flag
from rigwise.units import whole_count

RUNS, SLOW, NO_FIT = "runs", "too slow", "does not fit"


class FitOptions(BaseModel):
    """The options of ``rigwise fit`` (and ``/api/fit``); see ``fit_models``."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    on: str | None = Field(None, description="hardware as for infer --on; blank: this machine")
    use: Literal["chat", "code", "reasoning", "vision", "embedding", "text", "benchmark"] | None = (
        None
    )
    min_tps: float | None = Field(None, gt=0, description="decode tokens/s a model must reach")
    context: int | None = Field(None, ge=2, le=10_000_000, description="context to fit")
    engine: str | None = Field(None, description="llama.cpp, vllm, sglang, ...")
    benchmarks: bool = Field(False, description="include training-benchmark configurations")

    @field_validator("min_tps", "context", mode="before")
    @classmethod
    def _no_flags(cls, value: object, info: ValidationInfo) -> object:
        """A bool is no number (min_tps=True was 1 tok/s); a context reads '8k' as infer's
        --context does."""
        value = no_flag(None)(value)
        if info.field_name == "context" and isinstance(value, str):
            return whole_count(value, "4096 or 8k")
        return value


@dataclass(frozen=True)
class ModelFit:
    """One model on the hardware: its best quant, largest context, speeds and lever."""

    model: str
    uses: tuple[str, ...]
    params_total: int
    params_active: int
    status: str  # runs | too slow | does not fit
    quant: str
    native: bool  # the quant is the released format
    kv_quant: str
    max_context: int
    decode_tokens_per_s: float | None
    prefill_tokens_per_s: float | None
    memory_bytes: float
    capacity_bytes: float
    lever: str
    reason: str
    # P10-P90 of comparable independent measurements (estimate/plan_intervals.py); None: unknown
    decode_tokens_per_s_interval: tuple[float, float] | None = None
    prefill_tokens_per_s_interval: tuple[float, float] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "uses": list(self.uses),
            "params_total": self.params_total,
            "params_active": self.params_active,
            "status": self.status,
            "fits": self.status != NO_FIT,
            "quant": self.quant,
            "native": self.native,
            "kv_quant": self.kv_quant,
            "max_context": self.max_context,
            "decode_tokens_per_s": self.decode_tokens_per_s,
            "prefill_tokens_per_s": self.prefill_tokens_per_s,
            "memory_bytes": self.memory_bytes,
            "capacity_bytes": self.capacity_bytes,
            "lever": self.lever,
            "reason": self.reason,
            "decode_tokens_per_s_interval": _pair(self.decode_tokens_per_s_interval),
            "prefill_tokens_per_s_interval": _pair(self.prefill_tokens_per_s_interval),
        }


def _pair(value: tuple[float, float] | None) -> list[float] | None:
    return list(value) if value else None


@dataclass(frozen=True)
class FitReport:
    """Every catalog model ranked for one piece of hardware."""

    hardware: str
    engine: str
    context: int
    use: str | None
    min_tps: float | None
    models: tuple[ModelFit, ...]
    notes: tuple[str, ...]
    seconds: float

    @property
    def runs(self) -> tuple[ModelFit, ...]:
        return tuple(m for m in self.models if m.status == RUNS)

    def to_dict(self) -> dict[str, Any]:
        return {
            "hardware": self.hardware,
            "engine": self.engine,
            "context": self.context,
            "use": self.use,
            "min_tps": self.min_tps,
            "runs": len(self.runs),
            "models": [m.to_dict() for m in self.models],
            "notes": list(self.notes),
            "seconds": self.seconds,
        }


__all__ = ["NO_FIT", "RUNS", "SLOW", "FitOptions", "FitReport", "ModelFit"]
