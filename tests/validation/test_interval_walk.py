"""Walk the JSON of varied plans: every numeric prediction has a ``<name>_interval`` sibling.

A number that is not a prediction is excluded by name below, each group with why. A new
numeric field in `infer`, `train` or `build` JSON fails here until it has a range or is
named as an input, a component of a ranged total, or a figure no measured row can range.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rigwise.serialize import to_jsonable

# Subtrees holding no predictions: the layout and workload asked for, which rows set each
# range, rejection counts, a lever's change, and API prices.
SKIP_SECTIONS = {"layout", "workload", "intervals", "rejected", "pruned", "change", "api", "parts"}
# Inputs, hardware figures, prices and counts of layouts (what was asked or looked up).
INPUTS = {
    "tp", "pp", "dp", "ep", "cp", "vpp", "attention_dp", "gpus", "count", "nodes", "quantity",
    "prompt", "gen", "context", "concurrency", "running_batch", "replicas", "prefill_tp",
    "prefill_pp", "prefill_workers", "microbatches", "layer_fraction", "tokens", "deadline_s",
    "budget_s", "limit_watts", "hours_per_day", "capacity_bytes", "unit_price_usd",
    "purchase_usd", "price_usd_per_gpu_hour", "rent_usd_per_hour", "stale_prices", "goodput",
    "generated", "evaluated", "feasible",
    "memory_bytes",  # a pool's memory capacity (build --pool-on); plans' memory is total_bytes
}  # fmt: skip
# Components of a total that has its range (memory.total_bytes, step.seconds, ttft_s).
COMPONENTS = {
    "weights_bytes", "kv_cache_bytes", "activations_bytes", "overhead_bytes",
    "host_offload_bytes", "gradients_bytes", "optimizer_bytes", "other_bytes", "compute_s",
    "recompute_s", "memory_bound_s", "tp_comm_s", "cp_comm_s", "ep_comm_s", "pp_bubble_s",
    "pp_p2p_s", "dp_comm_s", "zero3_comm_s", "optimizer_s", "offload_s", "overhead_s",
    "queue_wait_s", "kv_transfer_s",
}  # fmt: skip
# Figures no measured row ranges: board power and the power-limit curve (catalog data), the
# costs that follow from them and prices (a bought build's TCO, electricity, the rent
# break-even), the queue's capacity (exact KV arithmetic over the ranged memory), a lever's
# speed-up (a ratio of two ranged speeds whose errors share a regime), and how fast our own
# search ran.
UNRANGED = {
    "drawn_watts", "power_watts_idle", "power_watts_load", "power_watts_per_gpu",
    "compute_relative_throughput", "memory_relative_throughput", "decode_relative_throughput",
    "electricity_usd_per_year", "electricity_usd_per_month", "tco_usd", "rent_break_even_hours",
    "rent_break_even_months", "max_concurrency", "queued", "decode_speedup", "seconds",
    "lookup_seconds", "layouts_per_s",
}  # fmt: skip
RUNTIME_SECONDS = ("search",)  # "seconds" of a search is our runtime; of a step, a prediction


def unranged(node: Any, path: str = "") -> Iterator[str]:
    """Paths of numeric prediction fields without a ``<name>_interval`` of two bounds."""
    if isinstance(node, list):
        for item in node:
            yield from unranged(item, path + "[]")
        return
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        where = f"{path}.{key}" if path else key
        if key in SKIP_SECTIONS or key.endswith("_interval"):
            continue
        if isinstance(value, (dict, list)):
            yield from unranged(value, where)
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        excluded = key in INPUTS | COMPONENTS | UNRANGED
        if key == "seconds" and not path.endswith(RUNTIME_SECONDS) and path:
            excluded = False  # step.seconds, prefill.seconds: predictions
        bounds = node.get(f"{key}_interval")
        if not excluded and not (isinstance(bounds, list) and len(bounds) == 2):
            yield where


def test_the_walker_finds_a_prediction_without_its_range() -> None:
    plan = {"decode": {"tokens_per_s": 10.0, "seconds_per_token": 0.1}, "gpus": 2}
    plan["decode"]["tokens_per_s_interval"] = [9.0, 12.0]
    assert list(unranged(plan)) == ["decode.seconds_per_token"]
    assert list(unranged({"step": {"seconds": 1.0}})) == ["step.seconds"]
    assert list(unranged({"search": {"seconds": 0.01}})) == []


def _infer(**options: Any) -> Any:
    from rigwise.api.infer import plan_inference

    return plan_inference(**options)


def _search(**options: Any) -> Any:
    from rigwise.api.serving_search import search_serving_layouts

    return search_serving_layouts(**options)


def _train(**options: Any) -> Any:
    from rigwise.api.train import plan_training

    return plan_training(**options)


def _build(**options: Any) -> Any:
    from rigwise.design.api import design_builds

    return design_builds(**options)


def _pool() -> Any:
    from rigwise.design.clusters import pooled_memory_answer

    return pooled_memory_answer(
        "llama-3.1-70b", "raspberry-pi-cm4-8gb", 20, "1gbe", reference="m3-max-40c-128gb",
        quant="Q4_K_M",
    )  # fmt: skip


CASES = {
    "llama.cpp one GPU, levers, power limit, latency budget": (
        _infer,
        {"model": "llama-3.1-8b", "on": "rtx-4090", "quant": "Q4_K_M", "power_limit": 300,
         "latency_budget": "50ms"},
    ),
    "vLLM serving, 64 users on 4 H100": (
        _infer,
        {"model": "llama-3.1-70b", "on": "4x h100-sxm", "engine": "vllm", "quant": "BF16",
         "concurrency": 64, "levers": False},
    ),
    "MoE over two nodes, tp16 ep16": (
        _infer,
        {"model": "deepseek-v3", "on": "dgx-h100", "nodes": 2, "network": "ib-ndr",
         "engine": "sglang", "quant": "FP8", "concurrency": 32, "tp": 16, "ep": 16,
         "levers": False},
    ),
    "disaggregated prefill/decode": (
        _infer,
        {"model": "deepseek-v3", "on": "dgx-h100", "nodes": 4, "network": "ib-ndr",
         "engine": "sglang", "quant": "FP8", "concurrency": 64, "levers": False,
         "disagg": {"prefill": {"tp": 16, "workers": 1}, "decode": {"tp": 16, "workers": 1}}},
    ),
    "serving layout search": (
        _search,
        {"model": "llama-3.1-8b", "on": "8x h100-sxm", "engine": "vllm", "quant": "BF16",
         "slo_tpot": "40ms"},
    ),
    "pretraining with layout search": (
        _train, {"model": "llama-3.1-8b", "on": "dgx-h100", "tokens": "10B", "search": True}
    ),
    "QLoRA fine-tune on one card": (
        _train,
        {"model": "llama-3.1-8b", "on": "rtx-4090", "method": "qlora",
         "dataset_tokens": "50M", "epochs": 2},
    ),
    "build for inference": (_build, {"model": "llama-3.1-8b", "top": 3}),
    "build for a fine-tune": (_build, {"model": "llama-3.1-8b", "task": "finetune", "top": 2}),
    "build: is a pool of small machines one big one": (_pool, {}),
}  # fmt: skip


@pytest.mark.parametrize("name", list(CASES))
def test_every_numeric_prediction_has_its_range(name: str) -> None:
    run, options = CASES[name]
    data = to_jsonable(run(**options))
    assert not list(unranged(data)), name
    # the walk saw something: each case has ranged values
    assert "_interval" in repr(data)
