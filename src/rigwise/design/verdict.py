"""Is this GPU a good buy, and for what? Verdicts per use from ``gpu_verdict_rules.csv``.

Each rule is data: which devices (id globs), an optional metric test on the catalog row, the uses
it speaks to, a severity and the reason with its source. A use's verdict is its worst severity:
``bad`` when a rule says the card is not a good buy for it, ``caution`` when it works with a
catch, else ``good``. Nothing here says anything about a card that a rule row does not.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rigwise.catalog.loader import read_csv
from rigwise.errors import InputError
from rigwise.hardware import Accelerator
from rigwise.serialize import JsonObject

USES = ("chat", "serve", "finetune", "train")
_KIND_WORDS = {
    "cpu": "a CPU",
    "unified": "a unified-memory machine",
    "tpu": "a TPU",
    "npu": "an NPU",
}
_ORDER = {"good": 0, "caution": 1, "bad": 2}


@dataclass(frozen=True)
class Reason(JsonObject):
    rule: str
    severity: str
    reason: str
    source: str


@dataclass(frozen=True)
class Verdict(JsonObject):
    """The card's verdict per use, each with the reasons that set it."""

    device: str
    uses: Mapping[str, str]  # use -> good | caution | bad
    reasons: Mapping[str, tuple[Reason, ...]]

    def summary(self) -> str:
        """'good for chat; caution for serve; bad for finetune, train'."""
        groups: dict[str, list[str]] = {}
        for use, verdict in self.uses.items():
            groups.setdefault(verdict, []).append(use)
        return "; ".join(f"{v} for {', '.join(us)}" for v, us in sorted(groups.items(),
                         key=lambda kv: _ORDER[kv[0]]))  # fmt: skip


def metrics(device: Accelerator) -> dict[str, Any]:
    vector = device.vector_fp32_flops or device.flops.get("fp32", 0.0) or 1.0
    fp16 = device.flops.get("fp16", 0.0)
    bf16 = device.flops.get("bf16", 0.0)
    price = device.price_usd
    gb = device.memory_bytes / 1e9
    return {
        "fp16_per_fp32": fp16 / vector,
        "bf16": bf16 or None,
        "power_connectors": device.power_connectors,
        "launch_year": device.launch_year,
        "usd_per_gb": price / gb if price and gb else None,
    }


def _matches(row: Mapping[str, str], device: Accelerator, values: Mapping[str, Any]) -> bool:
    globs = [g for g in row["applies_to"].split(";") if g]
    if globs and not any(fnmatch.fnmatch(device.id, g) for g in globs):
        return False
    metric, op = row["metric"], row["op"]
    if not metric:
        return True
    value = values.get(metric)
    if op == "missing":
        return not value
    if value is None or value == "":
        return False
    if op == "contains":
        return row["value"].lower() in str(value).lower()
    number = float(value)
    return number < float(row["value"]) if op == "lt" else number > float(row["value"])


def verdict(device: Accelerator) -> Verdict:
    """The verdict rules that apply to ``device``, per use; ``InputError`` for a device that is
    not a GPU: no rule speaks to one, and no rule is no reason to call it good for training."""
    if device.kind != "gpu":
        raise InputError(
            f"--verdict rates GPUs; {device.id} is {_KIND_WORDS.get(device.kind, device.kind)} "
            "(no verdict rule speaks to it).",
            hint=f"See its fields with `rigwise gpu {device.id}`, or plan a model on it with "
            f"`rigwise infer MODEL --on {device.id}`.",
        )
    values = metrics(device)
    reasons: dict[str, list[Reason]] = {use: [] for use in USES}
    for row in read_csv("gpu_verdict_rules.csv"):
        if not _matches(row, device, values):
            continue
        reason = Reason(row["rule"], row["severity"], row["reason"], row["source"])
        for use in row["uses"].split(";"):
            if use in reasons:
                reasons[use].append(reason)
    uses = {
        use: max((r.severity for r in found if r.severity != "good"), key=_ORDER.__getitem__,
                 default="good")
        for use, found in reasons.items()
    }  # fmt: skip
    ordered = {u: tuple(sorted(rs, key=lambda r: -_ORDER[r.severity])) for u, rs in reasons.items()}
    return Verdict(device.id, uses, ordered)
