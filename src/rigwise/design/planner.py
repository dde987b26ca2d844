"""The one adapter between the designer and the planners (``rigwise.api.infer`` /
``rigwise.api.train``). The designer only sees ``Estimate``; tests pass a fake planner.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from rigwise.errors import RigwiseError
from rigwise.serialize import JsonObject


@dataclass(frozen=True)
class Estimate(JsonObject):
    fits: bool
    reason: str = ""
    decode_tokens_per_s: float | None = None
    prefill_tokens_per_s: float | None = None
    time_to_train_s: float | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)
    # P10-P90 ranges of the values above (estimate/plan_intervals.py); None when not known
    decode_tokens_per_s_interval: list[float] | None = None
    prefill_tokens_per_s_interval: list[float] | None = None
    time_to_train_s_interval: list[float] | None = None


class Planner(Protocol):
    def __call__(
        self,
        *,
        task: str,
        model: str,
        on: str,
        nodes: int,
        network: str | None,
        engine: str | None,
        quant: str | None,
        split: str | None,
        concurrency: int,
        tokens: float | None,
        method: str | None = None,
    ) -> Estimate: ...


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        if obj is None:
            return None
        obj = obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)
    return obj


def _as_data(plan: Any) -> Any:
    """The plan's JSON (with its ranges) when it has one; fakes in tests may be plain dicts."""
    from rigwise.serialize import to_jsonable

    return to_jsonable(plan)


def _infer(options: dict[str, Any], plan_inference: Callable[..., Any]) -> Estimate:
    plan = _as_data(plan_inference(**options))
    fits = bool(_get(plan, "fits"))
    return Estimate(
        fits=fits,
        reason=str(_get(plan, "verdict") or _get(plan, "reason") or ""),
        decode_tokens_per_s=_get(plan, "decode", "tokens_per_s"),
        prefill_tokens_per_s=_get(plan, "prefill", "tokens_per_s"),
        detail={
            "serving": _get(plan, "serving", "aggregate_tokens_per_s"),
            "serving_interval": _get(plan, "serving", "aggregate_tokens_per_s_interval"),
            "interval_note": _get(plan, "intervals", "decode", "interval_note"),
        },
        decode_tokens_per_s_interval=_get(plan, "decode", "tokens_per_s_interval"),
        prefill_tokens_per_s_interval=_get(plan, "prefill", "tokens_per_s_interval"),
    )


def _train(options: dict[str, Any], plan_training: Callable[..., Any]) -> Estimate:
    plan = _as_data(plan_training(**options))
    return Estimate(
        fits=bool(_get(plan, "fits")),
        reason=str(_get(plan, "reason") or ""),
        time_to_train_s=_get(plan, "time_to_train_s"),
        detail={
            "tokens_per_s": _get(plan, "tokens_per_s"),
            "tokens_per_s_interval": _get(plan, "tokens_per_s_interval"),
            "interval_note": _get(plan, "intervals", "speed", "interval_note"),
        },
        time_to_train_s_interval=_get(plan, "time_to_train_s_interval"),
    )


def rigwise_planner() -> Planner:
    """The real planners, imported on first use."""
    from rigwise.api.infer import plan_inference

    def planner(
        *,
        task: str,
        model: str,
        on: str,
        nodes: int,
        network: str | None,
        engine: str | None,
        quant: str | None,
        split: str | None,
        concurrency: int,
        tokens: float | None,
        method: str | None = None,
    ) -> Estimate:
        base: dict[str, Any] = {"model": model, "on": on}
        if nodes > 1:
            base.update(nodes=nodes, network=network)
        try:
            if task in ("infer", "serve"):
                options = {**base, "quant": quant, "concurrency": concurrency, "levers": False}
                options.update({k: v for k, v in (("engine", engine), ("split", split)) if v})
                return _infer(options, plan_inference)
            from rigwise.api.train import plan_training

            default = "pretrain" if task == "train" else "qlora" if quant == "NF4" else "lora"
            options = {**base, "method": method or default, "search": True}
            if tokens:
                options["tokens"] = tokens
            return _train(options, plan_training)
        except RigwiseError as exc:
            return Estimate(fits=False, reason=f"planner: {exc}")

    return planner
