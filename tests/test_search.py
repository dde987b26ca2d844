"""Layout search: generate -> estimate -> choose, with counted pruning and fixed flags kept."""

from __future__ import annotations

import csv

import pytest

from rigwise.api.train import plan_training
from rigwise.estimate.compute import training_factors
from rigwise.estimate.training import evaluate
from rigwise.estimate.training_layout import Layout, LayoutArrays, Workload, geometry
from rigwise.search import explain_difference, search_layouts
from rigwise.validation.training import DATA_DIR, fabric, gpt_spec, published_layout

KORTHIKANTI = list(
    csv.DictReader((DATA_DIR / "korthikanti_2022_table3_table5_end_to_end.csv").open())
)


def test_fixed_flags_stay_fixed_and_every_candidate_is_accounted_for() -> None:
    plan = plan_training(
        model="llama-3.1-8b",
        on="8x h100-sxm",
        nodes=2,
        network="ib-ndr",
        seq=4096,
        global_batch=64,
        search=True,
        top=5,
        tp=2,
        recompute="full",
    )
    assert plan.fits and plan.search is not None
    for candidate in (plan, *plan.alternatives):
        assert candidate.layout is not None
        assert candidate.layout.tp == 2 and candidate.layout.recompute == "full"
        assert candidate.layout.gpus == 16
    stats = plan.search
    rejected_before_estimate = sum(
        n for r, n in stats.pruned.items() if r != "does not fit in memory"
    )
    assert stats.generated == rejected_before_estimate + stats.evaluated
    assert stats.evaluated == stats.feasible + stats.pruned.get("does not fit in memory", 0)
    steps = [p.step.seconds for p in (plan, *plan.alternatives) if p.step]
    assert steps == sorted(steps)


def test_heads_and_layers_divisibility_is_counted() -> None:
    plan = plan_training(
        model="llama-3.1-8b", on="8x h100-sxm", search=True, global_batch=8, seq=2048
    )
    pruned = plan.search.pruned if plan.search else {}
    assert pruned.get("sequence parallel needs tp > 1 (and is free with it)", 0) > 0
    assert any("virtual stages" in reason for reason in pruned)


def test_model_that_fits_nowhere_is_a_result_with_a_reason() -> None:
    plan = plan_training(model="llama-3.1-405b", on="rtx-4090", method="full", search=True)
    assert not plan.fits
    assert "no layout" in plan.reason and "does not fit in memory" in plan.reason


@pytest.mark.parametrize("row", KORTHIKANTI, ids=[r["model"] for r in KORTHIKANTI])
def test_search_beats_or_matches_the_published_megatron_layout(row: dict[str, str]) -> None:
    h, a, layers = int(row["hidden_size"]), int(row["attention_heads"]), int(row["num_layers"])
    spec = gpt_spec(h, a, layers, 51200, 2048, row["model"])
    batch, gpus = int(row["global_batch_size"]), int(row["num_gpus"])
    work = Workload(
        seq_len=2048,
        global_batch=batch,
        flash_attention=False,
        dropout=True,
        overlap_grad_reduce=False,
    )
    fab = fabric("a100-sxm-80gb", 8, "ib-hdr", 8)
    factors = training_factors(fab.accelerator.id)
    published = published_layout(row, batch, recompute="selective", sequence_parallel=True)
    geo = geometry(spec)
    given = evaluate(geo, work, LayoutArrays.from_layouts([published]), fab, factors)
    assert bool(given.fits[0]), "the published layout fits by rigwise's memory model"
    result = search_layouts(geo, work, fab, factors, gpus, {})
    assert result.evaluation is not None and result.feasible > 0
    best = int(result.order[0])
    best_s = float(result.evaluation.step.seconds[best])
    assert best_s <= float(given.step.seconds[0]) * (1 + 1e-9)
    parts_best = {k: float(v[best]) for k, v in result.evaluation.step.parts.items()}
    parts_given = {k: float(v[0]) for k, v in given.step.parts.items()}
    explanation = explain_difference(parts_best, parts_given)
    assert best_s == pytest.approx(float(given.step.seconds[0]), rel=1e-9) or explanation


MEGATRON = list(csv.DictReader((DATA_DIR / "megatron_lm_2021_table1_weak_scaling.csv").open()))


@pytest.mark.parametrize("row", MEGATRON, ids=[r["params_billion"] + "B" for r in MEGATRON])
def test_search_beats_or_matches_megatron_table1_layouts(row: dict[str, str]) -> None:
    h, a, layers = int(row["hidden_size"]), int(row["attention_heads"]), int(row["num_layers"])
    spec = gpt_spec(h, a, layers, 51200, 2048, row["params_billion"])
    batch, gpus = int(row["global_batch_size"]), int(row["num_gpus"])
    tp, pp = int(row["tensor_parallel"]), int(row["pipeline_parallel"])
    work = Workload(
        seq_len=2048,
        global_batch=batch,
        precision="fp16",
        flash_attention=False,
        dropout=True,
        overlap_grad_reduce=False,
    )
    fab = fabric("a100-sxm-80gb", 8, "ib-hdr", 8)
    factors = training_factors(fab.accelerator.id)
    published = Layout(
        tp=tp,
        pp=pp,
        dp=gpus // (tp * pp),
        vpp=2 if pp > 1 and (layers // pp) % 2 == 0 else 1,
        micro_batch=1,
        global_batch=batch,
        recompute="full",
    )
    geo = geometry(spec)
    given = evaluate(geo, work, LayoutArrays.from_layouts([published]), fab, factors)
    result = search_layouts(geo, work, fab, factors, gpus, {})
    assert result.evaluation is not None and result.feasible > 0
    best_s = float(result.evaluation.step.seconds[int(result.order[0])])
    assert best_s <= float(given.step.seconds[0]) * (1 + 1e-9)


def test_405b_on_16k_h100_search_finds_a_fitting_layout() -> None:
    plan = plan_training(
        model="llama-3.1-405b",
        on="8x h100-sxm",
        nodes=2048,
        network="roce-400",
        seq=8192,
        global_batch=2048,
        search=True,
    )
    assert plan.fits and plan.layout is not None and plan.layout.gpus == 16384
    assert plan.memory_per_gpu is not None and plan.memory_per_gpu.total_bytes <= 80e9
    assert 0.1 < plan.mfu < 0.6


def test_a_large_search_does_not_keep_its_layouts(monkeypatch: pytest.MonkeyPatch) -> None:
    """generate's answers are kept for the searches of a sweep, up to a number of layouts in
    all: a search of 32 nodes of 8 H100 (deepseek-v3, objective cost, fewer GPUs allowed)
    generated 10.5 million layouts, and their 0.9 GB stayed in the process after it returned."""
    from rigwise import search

    monkeypatch.setattr(search, "_GENERATED", {})
    monkeypatch.setattr(search, "_KEEP_ROWS", 50_000, raising=False)
    values = {name: [1] for name in search._FIELDS}
    values.update(tp=[1, 2, 4, 8], pp=[1, 2, 4, 8], vpp=list(range(1, 3001)))  # 48,000

    def kept() -> int:
        return sum(len(lay) for lay in search._GENERATED.values())

    first = search._generated(values, 64, None, False)
    assert len(first) == 48_000 and kept() == 48_000
    assert search._generated(values, 64, None, False) is first  # kept for the next search
    assert len(search._generated({**values, "zero": [0, 3]}, 64, None, False)) == 96_000
    assert kept() == 48_000  # over the budget alone: not kept
    search._generated({**values, "recompute": [2]}, 64, None, False)
    assert kept() == 48_000  # within it, but not beside the first: the first makes room
