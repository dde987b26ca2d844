"""Mixed rigs: 'rtx-3090+rtx-4090+rtx-5090' plans a layer split and says what the last card adds."""

from __future__ import annotations

from rigwise.api.infer import plan_inference
from rigwise.hardware.nodes import mixed_rig, parse_node


def test_a_plus_that_names_a_device_makes_a_mixed_rig() -> None:
    cluster = mixed_rig("rtx-3090+rtx-4090+rtx-5090")
    assert cluster is not None
    assert [n.accelerator.id for n in cluster.nodes] == ["rtx-3090", "rtx-4090", "rtx-5090"]
    assert cluster.network is not None and cluster.network.kind == "pcie"
    assert mixed_rig("2x rtx-3090+nvlink") is None  # a link after '+': one node, as before
    assert parse_node("2x rtx-3090+nvlink").nodes[0].count == 2
    counted = parse_node("2x rtx-3090+rtx-4090")
    assert [(n.accelerator.id, n.count) for n in counted.nodes] == [
        ("rtx-3090", 2),
        ("rtx-4090", 1),
    ]


def test_three_cards_split_layers_by_memory_and_the_lever_prices_the_third() -> None:
    plan = plan_inference(model="llama-3.1-70b", on="rtx-3090+rtx-4090+rtx-5090")
    assert plan.fits
    fractions = [stage.layer_fraction for stage in plan.layout.stages]
    assert fractions[2] > fractions[0] == fractions[1]  # the 32 GB card takes the most layers
    lever = plan.levers[0]
    assert lever.change == {"on": "rtx-3090+rtx-4090"}
    assert "without the rtx-5090" in lever.description and "with it:" in lever.description
    two = plan_inference(model="llama-3.1-70b", on="rtx-3090+rtx-4090", levers=False)
    assert lever.decode_tokens_per_s == two.decode.tokens_per_s


def test_moe_offload_is_a_lever_on_one_gpu() -> None:
    plan = plan_inference(model="gpt-oss-120b", on="rtx-4090")
    assert not plan.fits
    offload = next(lv for lv in plan.levers if lv.change.get("offload") == "auto")
    assert offload.fixes_fit and offload.change["host"] and not offload.quality_loss
    assert "MoE" in offload.description
