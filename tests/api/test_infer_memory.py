"""``memory_of`` keeps each setup's memory per KV-cache size: the same breakdown a fresh
computation gives, shared by the requests that ask for it again, never across sizes."""

from __future__ import annotations

from typing import Any

from rigwise.api import infer_memory
from rigwise.api.infer import _options, _setup_of
from rigwise.api.infer_memory import memory_of


def _setup() -> tuple[Any, Any, Any]:
    setup = _setup_of(_options(None, {"model": "llama-3.1-8b", "on": "2x rtx-3090"}))
    return setup.spec, setup.stages, setup.ctx


def test_a_kept_breakdown_is_the_one_computed_afresh() -> None:
    spec, stages, ctx = _setup()
    for kv in (0.0, 1e9, 3e9):
        kept = memory_of(spec, stages, ctx, kv, ctx.engine)
        assert kept == infer_memory._memory(spec, stages, ctx, kv, ctx.engine)
        assert memory_of(spec, stages, ctx, kv, ctx.engine) is kept


def test_each_kv_size_and_each_stages_object_has_its_own() -> None:
    spec, stages, ctx = _setup()
    small = memory_of(spec, stages, ctx, 1e9, ctx.engine)
    large = memory_of(spec, stages, ctx, 2e9, ctx.engine)
    assert large.kv_cache_bytes == 2 * small.kv_cache_bytes
    copied = (*stages,)  # equal stages, another object (an offloaded plan makes new ones)
    other = memory_of(spec, copied, ctx, 1e9, ctx.engine)
    assert other == small
    assert other is not small


def test_a_breakdowns_cached_sums_are_the_sums_over_its_devices() -> None:
    spec, stages, ctx = _setup()
    memory = memory_of(spec, stages, ctx, 1e9, ctx.engine)
    for name in ("weights_bytes", "kv_cache_bytes", "total_bytes", "capacity_bytes"):
        summed = sum(getattr(d, name) * d.count for d in memory.per_device)
        assert getattr(memory, name) == summed
        assert getattr(memory, name) == summed  # asked again: the kept value
    assert memory.to_dict()["total_bytes"] == memory.total_bytes
