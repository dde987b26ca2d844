"""Per-model quantities the estimators ask for many times, memoised by model identity.

Sweeps over layouts and batches ask for the KV-cache bytes and the FLOPs per token of the same
few contexts again and again; hashing a whole ``ModelSpec`` costs more than the arithmetic, so
entries are keyed by the object's identity (and checked to be that object on a hit).
"""

from __future__ import annotations

from typing import Any

from rigwise.models import ModelSpec

_MEMO: dict[tuple[str, int, int, str], tuple[ModelSpec, Any]] = {}
_MEMO_LIMIT = 100_000


def memoised(kind: str, spec: ModelSpec, context: int, dtype: str, compute: Any) -> Any:
    """Memoise per model object (by identity: hashing a whole ModelSpec costs more than the
    arithmetic); sweeps ask for the same few contexts many times."""
    key = (kind, id(spec), context, dtype)
    hit = _MEMO.get(key)
    if hit is not None and hit[0] is spec:
        return hit[1]
    if len(_MEMO) > _MEMO_LIMIT:
        _MEMO.clear()
    value = compute()
    _MEMO[key] = (spec, value)
    return value


def kv_bytes(spec: ModelSpec, context: int, dtype: str) -> float:
    """``spec.kv_cache_bytes(context, dtype)``, memoised."""
    return float(memoised("kv", spec, context, dtype, lambda: spec.kv_cache_bytes(context, dtype)))


def flops_parts(spec: ModelSpec, context: int) -> tuple[float, float]:
    """(matmul, attention) forward FLOPs per token at ``context``, memoised."""

    def compute() -> tuple[float, float]:
        parts = spec.flops_per_token_parts(context)
        return parts["matmul"], parts["attention"]

    result: tuple[float, float] = memoised("flops", spec, context, "", compute)
    return result
