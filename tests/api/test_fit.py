"""rigwise fit: every catalog model ranked for one piece of hardware."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rigwise.api.fit import fit_models, model_uses, quant_ladder
from rigwise.api.infer import plan_inference
from rigwise.errors import InputError, UnknownNameError
from rigwise.models import catalog_models, load_model

FAKE = Path(__file__).parents[1] / "probe" / "fake_degraded.yaml"


def test_every_catalog_model_has_uses_and_a_source() -> None:
    uses = model_uses()
    assert {m.name for m in catalog_models()} <= set(uses)


def test_the_ranking_on_a_3090_is_consistent_with_single_plans() -> None:
    report = fit_models(on="rtx-3090")
    by_name = {m.model: m for m in report.models}
    assert len(report.models) > 40  # every model with released weights
    eight = by_name["llama-3.1-8b"]
    assert eight.status == "runs" and eight.quant == "BF16" and eight.native
    single = plan_inference(model="llama-3.1-8b", on="rtx-3090", quant="BF16", context=4096)
    assert eight.decode_tokens_per_s == pytest.approx(single.decode.tokens_per_s)
    # a bigger model that runs at >= 4 bits ranks above a smaller one
    names = [m.model for m in report.models]
    assert names.index("qwen2.5-32b") < names.index("llama-3.1-8b")
    # 70B runs only at 2 bits: after every model that runs at 4 bits or more
    assert names.index("llama-3.1-70b") > names.index("qwen2.5-0.5b")
    assert by_name["llama-3.1-70b"].lever.startswith("2x rtx-3090: runs at Q4_K_M")


def test_a_model_that_does_not_fit_names_the_devices_it_needs() -> None:
    report = fit_models(on="rtx-3090", use="reasoning")
    r1 = next(m for m in report.models if m.model == "deepseek-r1")
    assert r1.status == "does not fit" and r1.max_context == 0
    assert "x rtx-3090" in r1.lever
    assert all("reasoning" in m.uses for m in report.models)


def test_the_best_quant_fits_and_the_next_better_one_does_not() -> None:
    report = fit_models(on="rtx-4090")
    for fit in report.models:
        if fit.status != "runs":
            continue
        ladder = quant_ladder("llama.cpp", model_uses()[fit.model].native_quant)
        index = ladder.index(fit.quant)
        if index:
            # fit plans at the default context capped by the model's own (Falcon: 2048).
            context = min(4096, load_model(fit.model).max_context)
            better = plan_inference(
                model=fit.model, on="rtx-4090", quant=ladder[index - 1], context=context,
                levers=False,
            )  # fmt: skip
            assert not better.fits, fit.model


def test_min_tps_moves_slow_models_down() -> None:
    report = fit_models(on="rtx-3090", min_tps=100)
    for fit in report.runs:
        assert fit.decode_tokens_per_s is not None and fit.decode_tokens_per_s >= 100
    assert any(m.status == "too slow" for m in report.models)


def test_a_given_context_ranks_the_whole_catalog() -> None:
    # Its speed (the whole catalog in < 1 s) is measured in benchmarks/bench_fit_oi.py.
    report = fit_models(on="rtx-4090", context=8192)
    assert report.context == 8192
    assert {m.model for m in report.models} == {m.model for m in fit_models(on="rtx-3090").models}


def test_this_machine_is_probed(monkeypatch: pytest.MonkeyPatch) -> None:
    from rigwise.api import machine

    monkeypatch.setenv("RIGWISE_FAKE_HARDWARE", str(FAKE))
    machine.this_machine.cache_clear()
    from rigwise.api import _lookup

    _lookup.cached_cluster.cache_clear()
    try:
        report = fit_models()
        assert report.hardware == "2x rtx-4090 (this machine)"
        assert len(report.runs) > 30
    finally:
        machine.this_machine.cache_clear()
        _lookup.cached_cluster.cache_clear()


def test_bad_options_are_input_errors() -> None:
    with pytest.raises(UnknownNameError):
        fit_models(on="rtx-3090", use="chatt")
    with pytest.raises(InputError):
        fit_models(on="rtx-3090", min_tps=0)


def test_speed_ranges_are_the_plans_own_ranges() -> None:
    from rigwise.serialize import to_jsonable

    fit = next(m for m in fit_models(on="rtx-4090").models if m.model == "llama-3.1-8b")
    plan = plan_inference(model="llama-3.1-8b", on="rtx-4090", quant=fit.quant, context=4096)
    data = to_jsonable(plan)
    assert fit.decode_tokens_per_s_interval is not None
    assert list(fit.decode_tokens_per_s_interval) == pytest.approx(
        data["decode"]["tokens_per_s_interval"]
    )
    assert list(fit.prefill_tokens_per_s_interval or ()) == pytest.approx(
        data["prefill"]["tokens_per_s_interval"]
    )


def test_models_whose_heads_refuse_tp3_run_as_replicas_on_three_devices() -> None:
    """tp 3 breaks vLLM's heads rule for 32-head models; a vLLM user runs such a model as one
    replica a device (or pipelines a large one over the three). Before: 2 of 65 catalog
    models 'ran' on 3x A100 with vLLM, mistral-7b 'did not fit' by the rule."""
    report = fit_models(on="3x a100-sxm-80gb", engine="vllm")
    mistral = {m.model: m for m in report.models}["mistral-7b-v0.3"]
    assert mistral.status == "runs"
    assert "tp-divides-attention-heads" not in mistral.lever
    assert sum(m.status == "runs" for m in report.models) > 40


def test_an_nvl72_node_runs_models_as_tp8_replicas() -> None:
    report = fit_models(on="gb200-nvl72")
    by_name = {m.model: m for m in report.models}
    assert by_name["llama-3.1-70b"].status == "runs"
    assert sum(m.status == "runs" for m in report.models) > 40


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"engine": "mlx"}, "--engine mlx does not run on rtx-4090"),
        ({"context": 16}, "--context 16 cannot hold the 512-token prompt"),
    ],
)
def test_when_every_plan_is_bad_input_the_reason_is_said(
    options: dict[str, object], says: str
) -> None:
    # before: 'rtx-4090 (mlx, context 4,096): 0 of 0 models run' (exit 1), no reason given:
    # every quant of every model was refused and dropped
    with pytest.raises(InputError, match=says):
        fit_models(on="rtx-4090", **options)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"on": 5}, "key 'on' = 5: Input should be a valid string"),  # was AttributeError
        ({"min_tps": "x"}, "key 'min_tps' = 'x': Input should be a valid number"),  # TypeError
        ({"min_tps": float("nan")}, "key 'min_tps' = nan: not a number"),  # before: none ran
        ({"min_tps": True}, "key 'min_tps' = True: Value error, true is not a number"),
        ({"engine": ""}, "key 'engine' = '': Value error, '' is empty"),  # was ValidationError
    ],
)
def test_options_of_a_wrong_type_are_bad_input(options: dict[str, object], says: str) -> None:
    with pytest.raises(InputError, match=re.escape(says)):
        fit_models(**{"on": "rtx-4090", **options})  # type: ignore[arg-type]
