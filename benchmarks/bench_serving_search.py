"""Speed of the serving layout search (``rigwise infer MODEL --on HW --search``).

Run: .venv/bin/python benchmarks/bench_serving_search.py
Prints, per case, the median sweep time over 5 runs (catalog warm), the layouts evaluated
(shapes x running batches x disaggregated worker splits, plus the rejected shapes), layouts/s,
the cold first call (catalog lookups included) and the best aggregated / disaggregated layout.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from rigwise.api.serving_search import search_serving_layouts

CASES: tuple[dict[str, Any], ...] = (
    dict(model="deepseek-v3", on="dgx-h200", nodes=2, network="ib-ndr", slo_tpot="50ms"),
    dict(model="llama-3.3-70b", on="dgx-h100", slo_ttft="1s", slo_tpot="40ms"),
    dict(model="qwen3-235b-a22b", on="dgx-h100", nodes=8, network="ib-ndr", slo_tpot="50ms"),
)


def _label(row: dict[str, Any] | None) -> str:
    if row is None:
        return "none"
    layout = f"tp{row['tp']} pp{row['pp']} ep{row['ep']} adp{row['attention_dp']}"
    return f"{row['quant']} {layout} b{row['running_batch']}: {row['tokens_per_s_per_gpu']:.0f}/GPU"


def main() -> None:
    header = (
        "case",
        "GPUs",
        "cold s",
        "sweep s",
        "layouts",
        "layouts/s",
        "best agg",
        "best disagg",
    )
    print(" | ".join(header))
    for case in CASES:
        start = time.perf_counter()
        search_serving_layouts(**case)
        cold = time.perf_counter() - start
        runs = [search_serving_layouts(**case) for _ in range(5)]
        sweep = statistics.median(r.seconds for r in runs)
        last = runs[-1]
        gpus = last.best_aggregated["gpus"] if last.best_aggregated else "-"
        print(
            f"{case['model']} on {case.get('nodes', 1)}x {case['on']} | {gpus} | {cold:.2f} | "
            f"{sweep:.3f} | {last.generated:,} | {last.generated / sweep:,.0f} | "
            f"{_label(last.best_aggregated)} | {_label(last.best_disaggregated)}"
        )


if __name__ == "__main__":
    main()
