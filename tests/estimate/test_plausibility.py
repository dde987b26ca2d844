"""MFU plausibility notes against the best published MFU per GPU generation and precision."""

from __future__ import annotations

import pytest

from rigwise.api.train import plan_training
from rigwise.estimate.plausibility import best_published_mfu, plausibility_notes


def test_an_mfu_above_the_generation_record_gets_a_note_naming_it() -> None:
    record = float(best_published_mfu("a100-sxm-80gb", "bf16")["best_mfu"])  # type: ignore[index]
    (note,) = plausibility_notes("a100-sxm-80gb", "bf16", record + 0.01)
    assert f"{record:.1%}" in note and "llm-foundry" in note
    assert plausibility_notes("a100-sxm-80gb", "bf16", record - 0.01) == ()
    assert plausibility_notes("a100-sxm-80gb", "fp16", record + 0.01)  # fp16 reads as bf16


def test_no_record_means_no_note() -> None:
    assert best_published_mfu("rtx-4090", "bf16") is None
    assert plausibility_notes("rtx-4090", "bf16", 0.9) == ()


@pytest.fixture(scope="module")
def gpt3_on_64_a100() -> object:
    return plan_training(model="gpt-3-175b", on="dgx-a100", nodes=8, network="ib-hdr", search=True)


def test_gpt3_175b_search_on_64_a100_says_why_when_above_the_record(gpt3_on_64_a100) -> None:
    plan = gpt3_on_64_a100
    record = float(best_published_mfu("a100-sxm-80gb", "bf16")["best_mfu"])  # type: ignore[index]
    above = plan.mfu > record
    assert above == any("above the best published" in n for n in plan.notes)


def test_gpt3_175b_search_does_not_shard_gradients_under_pipelining(gpt3_on_64_a100) -> None:
    # ZeRO-2 with PP once looked like free gradient memory and won at MFU 60.9 %.
    plan = gpt3_on_64_a100
    lay = plan.layout
    assert not (lay.zero == 2 and lay.pp > 1) or plan.memory_per_gpu.gradients_bytes > 20e9


def test_gpt3_175b_search_optimum_is_inside_the_published_a100_range(gpt3_on_64_a100) -> None:
    # Published A100 bf16 MFU spans Megatron TP/PP with recompute and unfused attention
    # (Korthikanti 2022 Table 5: 175B 51.4 %) up to FSDP + FlashAttention without recompute
    # (llm-foundry MPT-7B: 64.2 %). The optimum runs FlashAttention without recompute, so it
    # sits above the Megatron rows but not above the record.
    plan = gpt3_on_64_a100
    record = float(best_published_mfu("a100-sxm-80gb", "bf16")["best_mfu"])  # type: ignore[index]
    assert plan.layout.recompute == "none"
    assert 0.514 < plan.mfu < record
    assert not plan.notes


@pytest.fixture(scope="module")
def gpt3_on_64_a100_megatron_2022() -> object:
    # The published 175B runs used Megatron's unfused attention (no FlashAttention).
    return plan_training(
        model="gpt-3-175b",
        on="dgx-a100",
        nodes=8,
        network="ib-hdr",
        search=True,
        flash_attention=False,
    )


def test_gpt3_175b_search_optimum_is_inside_the_published_175b_range(
    gpt3_on_64_a100_megatron_2022,
) -> None:
    # Like for like with the published software stack (unfused attention): published 175B-1T
    # MFU on A100 with Megatron TP/PP is 51.4 % (Korthikanti 2022 Table 5, 175B on 64 GPUs)
    # to 56.3 % (1T); Narayanan 2021 Table 1 52 % (1T, with recompute). The default search
    # (FlashAttention, 59.1 %) has no published 175B run to compare with; it stays under the
    # A100 record checked above.
    plan = gpt3_on_64_a100_megatron_2022
    assert 0.51 <= plan.mfu <= 0.56
    assert plan.layout.tp * plan.layout.pp * plan.layout.dp == 64
