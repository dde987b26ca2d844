"""The largest context that fits: closed form on the memory model, checked by re-planning."""

from __future__ import annotations

import pytest

from rigwise.api.context import largest_context, plan_max_context
from rigwise.api.infer import plan_inference
from rigwise.errors import InputError
from rigwise.models import load_model


def test_the_largest_context_fits_and_one_thousand_more_tokens_do_not() -> None:
    plan = plan_inference(model="qwen2.5-32b", on="rtx-4090", context="max", levers=False)
    context = plan.workload.context
    assert plan.fits and 10_000 < context < 32_768
    over = plan_inference(model="qwen2.5-32b", on="rtx-4090", context=context + 1000, levers=False)
    assert not over.fits


def test_a_model_that_fits_at_its_maximum_says_so() -> None:
    plan = plan_inference(model="llama-3.1-8b", on="rtx-4090", context="max")
    assert plan.fits and plan.workload.context == 131_072
    assert "the model's maximum" in plan.notes[0]


def test_context_max_names_the_next_steps_with_their_reach() -> None:
    plan = plan_inference(model="qwen2.5-32b", on="rtx-4090", context="max")
    reach = plan.workload.context
    steps = [lever for lever in plan.levers if lever.description.startswith("longer context")]
    assert [s.change for s in steps] == [{"kv_quant": "q8_0"}, {"on": "2x rtx-4090"}]
    q8 = plan_inference(model="qwen2.5-32b", on="rtx-4090", context="max", kv_quant="q8_0")
    assert q8.workload.context > 1.7 * reach  # q8_0 is 8.5 bits a value against f16's 16
    assert f"{q8.workload.context:,}" in steps[0].description


def test_prompt_max_leaves_room_for_the_generated_tokens() -> None:
    plan = plan_inference(model="qwen2.5-32b", on="rtx-4090", prompt="max", gen=256, levers=False)
    assert plan.fits
    assert plan.workload.prompt + 256 == plan.workload.context


def test_weights_that_do_not_fit_give_no_context_and_the_default_plan() -> None:
    plan = plan_inference(model="llama-3.1-405b", on="rtx-4090", context="max", levers=False)
    assert not plan.fits
    assert plan.notes[0] == "not even the weights fit, at any context"


@pytest.mark.parametrize("context", [1, 4096, 100_000])
def test_largest_context_inverts_the_kv_size(context: int) -> None:
    spec = load_model("gemma-3-27b")  # sliding-window layers: KV grows piecewise linearly
    budget_ratio = spec.kv_cache_bytes(context, "f16") / spec.kv_cache_bytes(512, "f16")
    found = largest_context(spec, "f16", 512, budget_ratio)
    assert spec.kv_cache_bytes(found, "f16") <= spec.kv_cache_bytes(context, "f16")
    assert spec.kv_cache_bytes(found + 1, "f16") > spec.kv_cache_bytes(context, "f16") or (
        found == spec.max_context
    )


def test_plan_max_context_is_zero_without_room_for_the_weights() -> None:
    plan = plan_inference(model="llama-3.1-70b", on="rtx-3090", levers=False)
    assert plan_max_context(plan, load_model("llama-3.1-70b")) == 0


def test_prompt_max_with_a_context_given_is_bad_input() -> None:
    # before: '--prompt max --context 1000' planned a 130,944-token prompt in a 131,072-token
    # context, the --context 1000 given dropped without a word
    with pytest.raises(InputError, match="--context 1000 cannot be combined with it"):
        plan_inference(model="llama-3.1-8b", on="rtx-4090", prompt="max", context=1000)
    both = plan_inference(model="llama-3.1-8b", on="rtx-4090", prompt="max", context="max")
    assert both.workload.context == 131_072  # both 'max' still plan
