"""What a bench run may store: physical bounds, one reference plan before/after, and the
interval guard for short runs.

A measured efficiency outside (0.05, 1.0] is refused (``calibration.bounds_problem``). For the
rest, one reference plan (``REFERENCE_MODEL`` at ``REFERENCE_QUANT`` on the device, llama.cpp) is
planned before and after: the report shows both. A ``--quick`` run whose calibration moves that
plan outside its P10-P90 range (estimate/intervals.py) is not stored: a few seconds of
measurement do not overrule what the validation rows say; a full run may.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rigwise.bench.calibration import bounds_problem
from rigwise.bench.result import Skipped
from rigwise.errors import RigwiseError

REFERENCE_MODEL = "llama-3.1-8b"
REFERENCE_QUANT = "Q4_K_M"


@dataclass(frozen=True)
class Reference:
    """One plan before and after a calibration (decode tokens/s)."""

    plan: str
    before_tokens_per_s: float
    after_tokens_per_s: float
    interval: list[float] | None  # P10-P90 of the plan before calibration

    @property
    def outside(self) -> bool:
        if not self.interval:
            return False
        low, high = self.interval
        return not low <= self.after_tokens_per_s <= high

    def describe(self) -> str:
        ranged = (
            f" (range {self.interval[0]:,.1f}-{self.interval[1]:,.1f})" if self.interval else ""
        )
        return (
            f"{self.plan}: decode {self.before_tokens_per_s:,.1f}{ranged} -> "
            f"{self.after_tokens_per_s:,.1f} tok/s with this calibration"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "plan": self.plan,
            "before_tokens_per_s": self.before_tokens_per_s,
            "after_tokens_per_s": self.after_tokens_per_s,
            "interval": self.interval,
            "outside_interval": self.outside,
        }


def reference(
    accelerator_id: str, calibration: Mapping[str, float], model: str = REFERENCE_MODEL,
    quant: str = REFERENCE_QUANT,
) -> Reference | None:  # fmt: skip
    """The reference plan before/after ``calibration`` (None: no inference key, or no plan)."""
    from rigwise.api.infer import plan_inference
    from rigwise.estimate.inference_efficiency import CALIBRATION_KEYS

    usable = {k: v for k, v in calibration.items() if k in CALIBRATION_KEYS}
    if not usable:
        return None
    options: dict[str, Any] = dict(
        model=model, on=accelerator_id, quant=quant, engine="llama.cpp", levers=False
    )
    try:
        before = plan_inference(**options).to_dict()
        after = plan_inference(**options, calibration=usable).to_dict()
    except RigwiseError:
        return None
    if not before.get("decode") or not after.get("decode"):
        return None
    return Reference(
        plan=f"{model} {quant} on {accelerator_id} (llama.cpp)",
        before_tokens_per_s=float(before["decode"]["tokens_per_s"]),
        after_tokens_per_s=float(after["decode"]["tokens_per_s"]),
        interval=before["decode"].get("tokens_per_s_interval"),
    )


def screen(
    factors: Mapping[str, Mapping[str, float]], quick: bool
) -> tuple[dict[str, dict[str, float]], list[Skipped], list[Reference]]:
    """(factors to store, refusals with their reasons, reference plans before/after)."""
    kept: dict[str, dict[str, float]] = {}
    refused: list[Skipped] = []
    references: list[Reference] = []
    for accelerator, values in factors.items():
        good: dict[str, float] = {}
        for key, value in values.items():
            why = bounds_problem(key, value)
            if why:
                refused.append(
                    Skipped(f"calibration {key} for {accelerator}", f"not stored: {why}")
                )
            else:
                good[key] = value
        ref = reference(accelerator, good) if good else None
        if ref is not None:
            references.append(ref)
            if quick and ref.outside:
                refused.append(
                    Skipped(
                        f"calibration for {accelerator}",
                        f"not stored: it moves {ref.describe()}, outside the P10-P90 range; a "
                        "--quick run is too short to overrule the validated range (run "
                        "`rigwise bench` without --quick to store it)",
                    )
                )
                continue
        if good:
            kept[accelerator] = good
    return kept, refused, references
