"""The layout plan_inference picks when none is given and a whole-node tensor-parallel group
breaks the engine's head rules (a GB200 NVL72, or 3 cards)."""

from __future__ import annotations

import pytest

from rigwise.api.infer import plan_inference
from rigwise.errors import InputError


def test_nvl72_defaults_to_the_largest_tp_the_heads_allow_and_replicas() -> None:
    """No tp > 8 divides both llama-3.1-70b's 64 heads and 72 devices (72 = 8 x 9): tp 8,
    and 70.6B x 2 bytes = 141 GB fits one group of 8, so 72 / 8 = 9 replicas."""
    plan = plan_inference(model="llama-3.1-70b", on="gb200-nvl72")
    assert plan.fits
    assert (plan.layout.tp, plan.layout.pp, plan.layout.dp) == (8, 1, 9)
    assert plan.layout.gpus == 72
    assert any("9 data-parallel replicas" in note for note in plan.notes)


def test_a_given_layout_is_kept() -> None:
    plan = plan_inference(model="llama-3.1-70b", on="gb200-nvl72", tp=4, dp=2)
    assert (plan.layout.tp, plan.layout.dp) == (4, 2)
    assert not any("data-parallel replicas" in note for note in plan.notes)


def test_an_eight_device_node_is_left_alone() -> None:
    plan = plan_inference(model="llama-3.1-70b", on="8x h100-sxm")
    assert (plan.layout.tp, plan.layout.dp) == (8, 1)
    refused = plan_inference(
        model="llama-3-70b", on="3x rtx-3090", engine="vllm", quant="AWQ", tp=3
    )
    assert refused.broken_rule == "tp-divides-attention-heads"  # the rule still refuses tp 3


def test_three_cards_run_replicas_of_a_small_model_not_a_refused_tp3() -> None:
    """vLLM refuses --tensor-parallel-size 3 for 32 heads; 3x RTX 3090 users run one 8B
    replica a card. Before: 'does not fit' (the rule) and a fourth card as the lever."""
    plan = plan_inference(model="llama-3.1-8b", on="3x rtx-3090", engine="vllm")
    assert plan.fits and not plan.broken_rule
    assert (plan.layout.tp, plan.layout.pp, plan.layout.dp, plan.layout.gpus) == (1, 1, 3, 3)
    assert any("3 data-parallel replicas" in note for note in plan.notes)


def test_three_cards_pipeline_a_model_one_card_cannot_hold_without_an_idle_card() -> None:
    """llama-3-70b AWQ (~39 GB of weights) needs 2 of 23.2 GB usable per card; no tp divides
    both 3 cards and 64 heads but 1, so pp 3 on all three (vLLM's --pipeline-parallel-size 3),
    one replica, not pp 2 beside an idle card."""
    plan = plan_inference(model="llama-3-70b", on="3x rtx-3090", engine="vllm", quant="AWQ")
    assert plan.fits
    assert (plan.layout.tp, plan.layout.pp, plan.layout.dp, plan.layout.gpus) == (1, 3, 1, 3)
    assert any("1 data-parallel replica." in note for note in plan.notes)


def test_a_model_larger_than_one_group_pipelines_and_replicates_the_rest() -> None:
    """kimi-k2 in BF16 is ~2.05 TB: more than one group of 8 x 180 GB usable, less than two,
    so pp 2; 9 groups of 8 make 4 replicas of 2 (64 devices), one group idles."""
    plan = plan_inference(model="kimi-k2", on="gb200-nvl72", quant="BF16")
    assert plan.fits
    assert (plan.layout.tp, plan.layout.pp, plan.layout.dp, plan.layout.gpus) == (8, 2, 4, 64)


def test_an_unknown_host_is_named_as_a_cpu_platform_with_cpu_suggestions() -> None:
    # before: "Unknown GPU 'zzz'" for --host, which takes a CPU platform
    from rigwise.errors import UnknownNameError
    from rigwise.hardware import get_accelerator

    with pytest.raises(UnknownNameError, match="Unknown host CPU platform 'zzz'") as caught:
        plan_inference(model="llama-3.1-8b", on="h100", host="zzz", levers=False)
    assert caught.value.suggestions
    assert all(get_accelerator(name).kind == "cpu" for name in caught.value.suggestions)


@pytest.mark.parametrize(("dp", "tp"), [(2, 4), (8, 1)])
def test_dp_alone_splits_the_node_between_the_replicas(dp: int, tp: int) -> None:
    """Before: --dp 2 on 8x H100 said '--dp 2 replicas of tp 8 x pp 1 need 16 devices; 8
    given' (each replica took the whole node as its tp group)."""
    plan = plan_inference(model="llama-3.1-8b", on="8x h100-sxm", dp=dp, levers=False)
    assert plan.fits
    assert (plan.layout.tp, plan.layout.pp, plan.layout.dp, plan.layout.gpus) == (tp, 1, dp, 8)
    assert any(note.startswith(f"--dp {dp}: each replica on tp {tp}") for note in plan.notes)
    two_nodes = plan_inference(
        model="llama-3.1-70b", on="8x h100-sxm", nodes=2, network="ib-ndr", dp=2, levers=False
    )
    assert (two_nodes.layout.tp, two_nodes.layout.dp) == (8, 2)  # a node a replica: unchanged


@pytest.mark.parametrize(
    ("on", "nodes", "dp", "tp", "idle"),
    [
        ("8x h100-sxm", 1, 3, 2, 2),  # vllm serve -dp 3 -tp 2 on an 8-GPU box leaves 2 idle
        ("8x h100-sxm", 1, 5, 1, 3),
        ("8x h100-sxm", 2, 3, 4, 4),  # 16 devices / 3 = 5, the largest share dividing a node: 4
    ],
)
def test_dp_alone_that_does_not_divide_the_devices_leaves_the_rest_idle_and_says_so(
    on: str, nodes: int, dp: int, tp: int, idle: int
) -> None:
    """Before: --dp 3 on 8x H100 said '--dp 3 replicas of tp 8 x pp 1 need 24 devices'."""
    network = "ib-ndr" if nodes > 1 else None
    plan = plan_inference(
        model="llama-3.1-8b", on=on, nodes=nodes, network=network, dp=dp, levers=False
    )
    assert plan.fits
    assert (plan.layout.tp, plan.layout.dp, plan.layout.gpus) == (tp, dp, tp * dp)
    assert any(f"each replica on tp {tp}" in n and f"({idle} of the" in n for n in plan.notes)


@pytest.mark.parametrize(
    ("on", "nodes", "given", "layout"),
    [
        # vLLM refuses tp 3 for llama's 32 heads: the share is the largest the rule allows
        ("6x h100-sxm", 1, {"dp": 2}, (2, 1, 2, 4)),
        ("6x h100-sxm", 2, {"dp": 3}, (2, 2, 3, 12)),  # the stages fill the rest as pp 2
        ("8x h100-sxm", 1, {"dp": 3, "pp": 1}, (2, 1, 3, 6)),  # --pp given no longer turns it off
        ("8x h100-sxm", 1, {"dp": 2, "pp": 2}, (2, 2, 2, 8)),
    ],
)
def test_dp_share_follows_the_engine_head_rule_and_a_given_pp(
    on: str, nodes: int, given: dict[str, int], layout: tuple[int, int, int, int]
) -> None:
    """Before: '6x h100-sxm' --dp 2 with vLLM planned tp 3 and 'does not fit' (tp 3 does not
    divide 32 heads); --dp 3 --pp 1 on 8 said 'need 24 devices'."""
    network = "ib-ndr" if nodes > 1 else None
    plan = plan_inference(
        model="llama-3.1-8b",
        on=on,
        nodes=nodes,
        network=network,
        engine="vllm",
        levers=False,
        **given,
    )
    assert plan.fits
    assert (plan.layout.tp, plan.layout.pp, plan.layout.dp, plan.layout.gpus) == layout
    tp, pp, _, gpus = layout
    shape = f"tp {tp} x pp {pp}" if pp > 1 else f"tp {tp}"
    idle = nodes * int(on.split("x")[0]) - gpus
    note = next(n for n in plan.notes if n.startswith(f"--dp {given['dp']}: each replica on"))
    assert shape in note and ((f"({idle} of the" in note) == (idle > 0))


def test_dp_share_is_one_that_ep_divides() -> None:
    """Before: --dp 3 --ep 8 said '--ep 8 does not divide the tensor-parallel group of 2
    devices', a tp the user never gave; now the share is one --ep divides, or none is chosen."""
    plan = plan_inference(
        model="qwen3-30b-a3b", on="8x h100-sxm", engine="vllm", dp=3, ep=2, levers=False
    )
    assert (plan.layout.tp, plan.layout.ep, plan.layout.dp) == (2, 2, 3)
    with pytest.raises(InputError, match="--dp 3 replicas of tp 8 x pp 1 need 24 devices"):
        plan_inference(
            model="qwen3-30b-a3b", on="8x h100-sxm", engine="vllm", dp=3, ep=8, levers=False
        )


def test_more_replicas_than_devices_names_the_devices_they_need() -> None:
    with pytest.raises(InputError, match="--dp 9 replicas of tp 1 x pp 1 need 9 devices; 8 given"):
        plan_inference(model="llama-3.1-8b", on="8x h100-sxm", dp=9, levers=False)


def test_too_few_groups_on_a_mixed_rig_says_groups_not_devices() -> None:
    """Before: '--dp 3 replicas of tp 1 x pp 1 need 3 devices; 3 given' (a group a node: the
    rtx-4090 and the pair of rtx-3090s make 2 groups of 3 devices)."""
    with pytest.raises(InputError, match="need 3 tensor-parallel groups; these 3 devices make 2"):
        plan_inference(
            model="llama-3.1-8b", on="rtx-4090 + 2x rtx-3090", engine="vllm", dp=3, levers=False
        )
    given = plan_inference(
        model="llama-3.1-8b", on="rtx-4090 + 2x rtx-3090", engine="vllm", dp=3, tp=1, levers=False
    )
    assert given.fits and given.layout.gpus == 3  # what the hint says to give


@pytest.mark.parametrize(
    ("layout", "note"),
    [
        # was "Only 2 of the 8 devices hold layers (32 layers, one pipeline stage per layer at
        # most)": not why, the user chose tp 2 x pp 1
        ({"tp": 2, "pp": 1}, "tp 2 x pp 1 uses 2 of the 8 devices; 6 idle. --dp 4 would"),
        ({"tp": 1, "pp": 2}, "tp 1 x pp 2 uses 2 of the 8 devices; 6 idle. --dp 4 would"),
        # was no note at all
        ({"tp": 2, "dp": 3}, "tp 2 x pp 1 x 3 replicas uses 6 of the 8 devices; 2 idle."),
        ({"tp": 2, "pp": 1, "dp": 2}, "x 2 replicas uses 4 of the 8 devices; 4 idle. --dp 4"),
    ],
)
def test_a_layout_given_that_leaves_devices_idle_says_how_many(
    layout: dict[str, int], note: str
) -> None:
    plan = plan_inference(model="llama-3.1-8b", on="8x h100-sxm", engine="vllm", **layout)
    assert plan.fits
    assert [n for n in plan.notes if "idle" in n] == [n for n in plan.notes if note in n]
    assert any(note in n for n in plan.notes)


def test_a_layout_that_uses_every_device_has_no_idle_note() -> None:
    for layout in ({"tp": 2, "dp": 4}, {"tp": 8}, {"tp": 2}):
        plan = plan_inference(model="llama-3.1-8b", on="8x h100-sxm", engine="vllm", **layout)
        assert plan.layout.gpus == 8 and not any("idle" in n for n in plan.notes), layout


def test_a_mixed_rig_with_devices_left_is_not_offered_a_dp_that_counts_unlike_cards() -> None:
    plan = plan_inference(
        model="llama-3.1-8b", on="rtx-4090 + 2x rtx-3090", engine="vllm", tp=1, dp=2
    )
    assert "tp 1 x pp 1 x 2 replicas uses 2 of the 3 devices; 1 idle." in plan.notes


def test_a_pipeline_as_long_as_the_model_keeps_its_layer_count_reason() -> None:
    plan = plan_inference(model="tinyllama-1.1b", on="32x rtx-3090", engine="llama.cpp")
    assert any("Only 22 of the 32 devices hold layers (22 layers" in n for n in plan.notes)


def test_a_plan_priced_with_an_older_builds_tiles_says_so_and_a_current_one_does_not() -> None:
    # before: the build was in no note and no JSON field; only the decode's bound named it
    old = plan_inference(
        model="llama-3.1-8b", on="rtx-5090", engine="vllm", quant="FP8", engine_build="2025-10"
    )
    assert old.decode is not None
    share = old.decode.parts["gemm_tiles"] / old.decode.seconds
    (note,) = [n for n in old.notes if "GEMM tiles" in n]
    assert "--engine-build 2025-10-01" in note and 0 < share < 1
    assert old.decode.parts["gemm_tiles"] == max(old.decode.parts.values())  # the largest part
    assert f"{old.decode.parts['gemm_tiles'] * 1e3:.3g} of its" in note
    new = plan_inference(model="llama-3.1-8b", on="rtx-5090", engine="vllm", quant="FP8")
    assert not any("GEMM tiles" in n for n in new.notes)


def test_the_tile_note_says_its_figures_are_one_sequences_at_any_concurrency() -> None:
    # before: "... whole FP8 GEMM tiles at this batch: 13.8 of its 29.7 ms a token" with
    # --concurrency 64, whose TPOT was 76.8 ms: the figures are the batch-1 decode line's
    plan = plan_inference(
        model="llama-3.1-8b",
        on="rtx-5090",
        engine="vllm",
        quant="FP8",
        engine_build="2025-10",
        concurrency=64,
    )
    (note,) = [n for n in plan.notes if "GEMM tiles" in n]
    assert (
        note.startswith("Decode of one sequence (the decode line) pays")
        and "this batch" not in note
    )


def test_idle_devices_beside_offloaded_weights_are_not_hinted_more_replicas() -> None:
    # before: "tp 1 x pp 2 uses 2 of the 4 devices; 2 idle. --dp 2 would run a replica on each
    # 2." beside 29.0 GB offloaded to host RAM (decode 1.8 tok/s): two replicas offload as much
    # each, where --pp 4 holds the weights on the GPUs (11.6 tok/s)
    plan = plan_inference(
        model="llama-3.1-70b",
        on="4x rtx-4090",
        quant="Q8_0",
        offload="auto",
        host="ryzen-9-7950x-ddr5-6000",
        pp=2,
    )
    assert "tp 1 x pp 2 uses 2 of the 4 devices; 2 idle." in plan.notes
    assert not any("--dp" in n for n in plan.notes)
    assert any(
        n.endswith("The idle devices could hold them (a longer --pp or wider --tp).")
        for n in plan.notes
    )
