"""``search_serving_layouts``: more devices than given is bad input; one device says why no
disaggregated layout is searched."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigwise.api.serving_search import search_serving_layouts
from rigwise.errors import InputError


def test_more_gpus_than_the_cluster_is_bad_input() -> None:
    # before: --gpus 1000 on 8 H100s searched the 8 without a word
    with pytest.raises(InputError, match="--gpus 1000 is more than the 8 devices") as caught:
        search_serving_layouts(model="llama-3.1-8b", on="8x h100", gpus=1000)
    assert caught.value.hint is not None and "--gpus 8 or fewer" in caught.value.hint


def test_one_device_notes_that_disaggregation_needs_two() -> None:
    found = search_serving_layouts(model="llama-3.1-8b", on="h100")
    assert found.best_disaggregated is None and found.best_aggregated is not None
    assert found.notes == (
        "Disaggregated layouts need 2 or more devices (a prefill and a decode worker); 1 given.",
    )
    two = search_serving_layouts(model="llama-3.1-8b", on="8x h100", gpus=2)
    assert two.notes == () and two.best_disaggregated is not None


def test_the_search_is_bounded_by_the_devices_it_lays_out() -> None:
    # before: one node of 1,048,576 devices was searched whole (65,536 took 37 s and 13 GB;
    # this one was killed for memory); --gpus picks how many of them the search lays out
    with pytest.raises(
        InputError, match="--search covers up to 8,192 devices; 1,048,576"
    ) as caught:
        search_serving_layouts(model="llama-3.1-8b", on="1048576x h100")
    assert caught.value.hint is not None and "--gpus 8192 or fewer" in caught.value.hint
    found = search_serving_layouts(model="llama-3.1-8b", on="1048576x h100", gpus=8)
    assert found.best_aggregated is not None and found.best_aggregated["gpus"] <= 8


def test_a_mixed_cluster_counts_the_layouts_a_node_cannot_hold(tmp_path: Path) -> None:
    # before: tp 2 (sized by the first node, 2x rtx-3090) on the 1-GPU second node raised
    # "--tp 2 spans 2 nodes ..." and the whole search was an error (exit 2)
    path = tmp_path / "mixed.yaml"
    path.write_text(
        'nodes:\n  - {on: "2x rtx-3090", count: 1}\n  - {on: "rtx-4090", count: 1}\n'
        "network: 10gbe\n",
        encoding="utf-8",
    )
    found = search_serving_layouts(model="llama-3.1-8b", cluster=str(path))
    assert found.rejected["layout does not fit every node"] > 0
    assert found.best_aggregated is not None and found.best_aggregated["tp"] == 1


def test_the_result_says_whether_slos_were_given() -> None:
    # the CLI says "meet the SLOs" from this field, not from the rejection reasons' text
    plain = search_serving_layouts(model="llama-3.1-8b", on="h100-sxm")
    limited = search_serving_layouts(model="llama-3.1-8b", on="h100-sxm", slo_tpot="1ms")
    assert not plain.slos_given and limited.slos_given
    assert limited.feasible == 0 and "slos_given" not in limited.to_dict()


def test_counts_read_as_a_single_plan_reads_them() -> None:
    # before: 'rigwise infer MODEL --on HW --search --prompt 8k' said "key 'prompt' = '8k':
    # Input should be a valid integer" (a single plan takes 8k), and prompt=True searched a
    # 1-token prompt
    found = search_serving_layouts(model="llama-3.1-8b", on="2x h100-sxm", prompt="8k", gen="1k")
    assert found.rows
    with pytest.raises(InputError, match="key 'prompt' = True: Value error, true is not a number"):
        search_serving_layouts(model="llama-3.1-8b", on="2x h100-sxm", prompt=True)


@pytest.mark.parametrize("key", ["nodes", "gpus", "max_batch"])
def test_devices_nodes_and_batch_take_digits_as_a_single_plan_does(key: str) -> None:
    """gpus='1e3' searched 1,000 GPUs and nodes='8k' 8,000 nodes, where plan_inference (and the
    CLI's --gpus / --nodes) refuse both: they are not token counts."""
    for written in ("1e3", "8k"):
        with pytest.raises(InputError, match=f"key '{key}' = '{written}'"):
            search_serving_layouts(model="llama-3.1-8b", on="2x h100-sxm", **{key: written})
    assert search_serving_layouts(model="llama-3.1-8b", on="2x h100-sxm", **{key: "2"}).rows


def test_a_request_longer_than_the_models_context_is_bad_input(tmp_path: Path) -> None:
    """--search --prompt 200k on llama-3.1-8b (131,072 tokens) found 512 layouts that 'fit',
    where a single plan refuses the request; a config without a context length the same."""
    with pytest.raises(InputError, match=r"200,256 tokens is longer than llama-3\.1-8b.s 131,072"):
        search_serving_layouts(model="llama-3.1-8b", on="8x h100", prompt="200k")
    found = search_serving_layouts(model="llama-3.1-8b", on="h100", prompt=130_944, gen=128)
    assert found.best_aggregated is not None  # exactly the context: searched
    config = tmp_path / "x" / "config.json"
    config.parent.mkdir()
    config.write_text(
        '{"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, '
        '"num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 32, '
        '"vocab_size": 128256}'
    )
    with pytest.raises(InputError, match="x's config gives no context length"):
        search_serving_layouts(model=str(config.parent), on="h100")


def test_the_default_prompt_is_fitted_to_a_short_context() -> None:
    """'infer gpt2 --on rtx-4090 --search' (no request options) was refused: '--prompt 1,024
    + --gen 256 = 1,280 tokens is longer than gpt2's 1,024-token context', neither given. The
    default prompt is fitted, and says so; a prompt given is still held to the context."""
    found = search_serving_layouts(model="gpt2", on="rtx-4090")
    assert found.best_aggregated is not None
    assert "--prompt 768: the default 1,024 fitted to gpt2's 1,024-token context" in " ".join(
        found.notes
    )
    with pytest.raises(InputError, match=r"1,280 tokens is longer than gpt2's 1,024"):
        search_serving_layouts(model="gpt2", on="rtx-4090", prompt=1024)
    with pytest.raises(InputError, match=r"2,048 tokens is longer than gpt2's 1,024"):
        search_serving_layouts(model="gpt2", on="rtx-4090", gen=1024)
