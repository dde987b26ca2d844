"""plan_inference on the packaged catalog: documented keys, defaults, bad input, calibration."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.web.test_api_inputs import LLAMA_8B_CONFIG

from rigwise.api.infer import plan_inference
from rigwise.api.train import plan_training
from rigwise.errors import InputError, UnknownNameError
from rigwise.serialize import to_jsonable

DOCUMENTED = {
    "fits", "verdict", "memory", "prefill", "decode", "ttft_s", "serving", "levers",
}  # fmt: skip
MEMORY_KEYS = {
    "weights_bytes", "kv_cache_bytes", "activations_bytes", "overhead_bytes", "total_bytes",
    "per_device",
}  # fmt: skip


def test_plan_has_the_documented_json_keys() -> None:
    plan = to_jsonable(plan_inference(model="llama-3-8b", on="rtx-4090", quant="Q4_K_M"))
    assert isinstance(plan, dict)
    assert set(plan) >= DOCUMENTED
    assert set(plan["memory"]) >= MEMORY_KEYS
    assert {"tokens_per_s", "seconds", "bound"} <= set(plan["prefill"])
    assert {"tokens_per_s", "seconds_per_token", "bound"} <= set(plan["decode"])
    assert {
        "concurrency",
        "aggregate_tokens_per_s",
        "per_user_tokens_per_s",
        "max_concurrency",
    } <= set(plan["serving"])
    assert plan["fits"] is True and plan["ttft_s"] == plan["prefill"]["seconds"]


def test_70b_on_one_3090_does_not_fit_and_a_second_card_is_a_lever() -> None:
    plan = plan_inference(model="llama-3-70b", on="rtx-3090", quant="Q4_K_M")
    assert not plan.fits and plan.decode is None
    assert "rtx-3090" in plan.reason
    assert any(lever.change.get("on") == "2x rtx-3090" and lever.fixes_fit for lever in plan.levers)


def test_default_engine_follows_the_hardware() -> None:
    assert plan_inference(model="llama-3-8b", on="rtx-4090", levers=False).engine == "llama.cpp"
    assert plan_inference(model="llama-3-8b", on="h100-sxm", levers=False).engine == "vllm"
    mac = plan_inference(model="llama-3-8b", on="m2-ultra-76c-192gb", levers=False)
    assert mac.engine == "llama.cpp" and mac.quant == "Q4_K_M"


def test_serving_more_users_raises_throughput_until_the_kv_cache_is_full() -> None:
    base = dict(
        model="llama-3.1-8b", on="h100-sxm", quant="FP8", prompt=1000, gen=1000, levers=False
    )
    one = plan_inference(**base, concurrency=1).serving
    many = plan_inference(**base, concurrency=64).serving
    most = plan_inference(**base, concurrency="max").serving
    assert one is not None and many is not None and most is not None
    assert many.aggregate_tokens_per_s > 10 * one.aggregate_tokens_per_s
    assert most.running_batch == most.max_concurrency >= 64


def test_concurrency_beyond_the_kv_cache_queues_instead_of_failing() -> None:
    """Llama-3.3-70B FP8 on 2x H100 TP2, 5,000 in / 500 out at 250 requests (issue 13):
    the server admits what the KV cache holds and queues the rest."""
    base = dict(
        model="llama-3.3-70b", on="2x h100-sxm", quant="FP8", prompt=5000, gen=500, levers=False
    )
    some, many = (plan_inference(**base, concurrency=c) for c in (100, 250))
    assert some.fits and many.fits
    assert some.serving is not None and many.serving is not None
    assert many.serving.running_batch == some.serving.running_batch < 100
    assert many.serving.queued == 250 - many.serving.running_batch
    assert many.serving.aggregate_tokens_per_s == pytest.approx(some.serving.aggregate_tokens_per_s)
    assert many.serving.ttft_s > 2 * some.serving.ttft_s
    keys = {"ttft_s", "tpot_s", "aggregate_tokens_per_s", "tokens_per_s_per_gpu", "running_batch"}
    assert keys | {"queued"} <= set(to_jsonable(many)["serving"])


def test_calibration_changes_the_speed_it_names() -> None:
    base = dict(model="llama-3-8b", on="rtx-4090", quant="Q4_K_M", levers=False)
    slow = plan_inference(**base, calibration={"decode_bandwidth_efficiency": 0.3})
    normal = plan_inference(**base)
    assert slow.decode is not None and normal.decode is not None
    assert slow.decode.tokens_per_s < 0.6 * normal.decode.tokens_per_s
    assert slow.prefill is not None and normal.prefill is not None
    assert slow.prefill.tokens_per_s == pytest.approx(normal.prefill.tokens_per_s, rel=0.05)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"model": "llama-3-8b", "on": "rtx 4900"}, "4900"),
        ({"model": "llama-3-8b", "on": "rtx-4090", "engine": "vllmm"}, "vllmm"),
        ({"model": "llama-3-8b", "on": "rtx-4090", "concurrency": 0}, "concurrency"),
        ({"model": "llama-3-8b", "on": "rtx-4090", "context": 10_000_000}, "10000000"),
        ({"model": "llama-3-8b", "on": "rtx-4090", "qaunt": "Q4_K_M"}, "qaunt"),
        ({"model": "llama-3-8b", "on": "rtx-4090", "quant": "Q4_K_X"}, "Q4_K_X"),
        ({"model": "llama-3-8b", "on": "2x rtx-4090", "tp": 3}, "--tp 3"),
        ({"model": "llama-3-8b"}, "hardware"),
        ({"model": "llama-3-8b", "on": "rtx-4090", "engine": "mlx"}, "mlx"),
    ],
)
def test_bad_input_names_the_bad_value(options: dict[str, object], match: str) -> None:
    with pytest.raises(InputError, match=match):
        plan_inference(**options)


def test_unknown_gpu_suggests_close_names() -> None:
    with pytest.raises(UnknownNameError) as info:
        plan_inference(model="llama-3-8b", on="rtx 4900")
    assert info.value.suggestions


def test_cpu_offload_makes_a_big_model_fit_and_runs_at_host_speed() -> None:
    base = dict(model="llama-3-70b", on="rtx-3090", quant="Q4_K_M", levers=False)
    plain = plan_inference(**base, offload="auto")
    assert not plain.fits and any("--host" in note for note in plain.notes)
    offloaded = plan_inference(**base, offload="auto", host="ryzen-9-7950x-ddr5-6000")
    assert offloaded.fits and offloaded.memory.host_offload_bytes > 10e9
    assert offloaded.decode is not None and offloaded.decode.bound.startswith("host RAM")
    on_gpus = plan_inference(**{**base, "on": "2x rtx-3090"})
    assert on_gpus.decode is not None
    assert offloaded.decode.tokens_per_s < 0.5 * on_gpus.decode.tokens_per_s


def test_host_must_be_a_cpu() -> None:
    with pytest.raises(InputError, match="not a CPU"):
        plan_inference(model="llama-3-70b", on="rtx-3090", offload="auto", host="rtx-4090")


def test_transformers_decode_pays_its_python_dispatch_per_layer() -> None:
    """fxmarty/accelerated-pytorch-transformers-generation README: default transformers generate,
    llama-7b fp16 on an A10G, batch 1, 1000-token prompt + 200 new tokens: 23.150 tok/s (the
    row the per-layer overhead was fitted on), and the same overhead on a faster GPU."""

    fields = dict(model="llama-2-7b", quant="F16", prompt=1000, gen=200, levers=False)
    a10g = plan_inference(on="a10g", engine="transformers", **fields)
    assert a10g.decode is not None
    assert a10g.decode.tokens_per_s == pytest.approx(23.150, rel=0.01)
    assert a10g.decode.parts["kernel_overhead"] == pytest.approx(32 * 287e-6)
    fast = plan_inference(on="rtx-4090", engine="transformers", **fields)
    vllm = plan_inference(on="rtx-4090", engine="vllm", **fields)
    assert fast.decode is not None and vllm.decode is not None
    assert fast.decode.parts["kernel_overhead"] == a10g.decode.parts["kernel_overhead"]
    assert fast.decode.tokens_per_s < vllm.decode.tokens_per_s


def test_nodes_without_a_network_say_their_hops_are_not_costed() -> None:
    bare = plan_inference(model="llama-3.1-70b", on="4x a100-sxm-80gb", nodes=2, levers=False)
    assert bare.hardware == "2 nodes of 4x a100-sxm-80gb over no network given"
    assert any(note.startswith("No --network") for note in bare.notes)
    linked = plan_inference(
        model="llama-3.1-70b", on="4x a100-sxm-80gb", nodes=2, network="ib-ndr", levers=False
    )
    assert linked.hardware == "2 nodes of 4x a100-sxm-80gb over ib-ndr"
    assert not any(note.startswith("No --network") for note in linked.notes)


def test_expert_parallel_on_a_dense_model_is_bad_input() -> None:
    # before: --ep 2 on llama-3.1-8b (no experts) planned exactly as without it, silently
    with pytest.raises(InputError, match=r"--ep 2 asks for expert parallel, but llama-3\.1-8b"):
        plan_inference(model="llama-3.1-8b", on="8x h100", ep=2, levers=False)
    pools = {"prefill": {"tp": 4}, "decode": {"tp": 4, "ep": 4}}
    with pytest.raises(InputError, match=r"--disagg decode\.ep 4") as caught:
        plan_inference(model="llama-3.1-8b", on="8x h100", disagg=pools, levers=False)
    assert caught.value.hint is not None and "decode.tp 4" in caught.value.hint


def test_expert_parallel_on_a_moe_model_still_plans() -> None:
    plan = plan_inference(model="qwen3-30b-a3b", on="8x h100", tp=8, ep=8, levers=False)
    assert plan.fits


def test_without_an_api_server_the_front_end_does_not_cap_the_rate() -> None:
    # engine_overheads.csv vllm frontend_token_us 77.8: one API-server process streams at most
    # 1e6 / 77.8 = 12.85k tokens/s; a run that drives the engine in-process (api_server False,
    # as vLLM PR #53060's pure-decode harness) is held only by the engine
    asked = dict(
        model="qwen3-0.6b", on="h100-sxm", quant="BF16", engine="vllm", prompt=512, gen=128,
        concurrency=500, levers=False,
    )  # fmt: skip
    served = plan_inference(**asked).serving
    alone = plan_inference(**asked, api_server=False).serving
    assert served is not None and alone is not None
    assert served.aggregate_tokens_per_s == pytest.approx(1e6 / 77.8, rel=1e-3)
    assert alone.aggregate_tokens_per_s > 1.2e6 / 77.8
    assert alone.running_batch > served.running_batch
    assert "bandwidth" in alone.bound or "compute" in alone.bound


def test_a_request_longer_than_the_model_names_prompt_and_gen() -> None:
    # before: "--context 200512 is longer than llama-3.1-8b's 131072 tokens" when no --context
    # was given: 512 + 200,000 tokens, and 131,072 - 512 = 130,560 is the longest gen
    with pytest.raises(
        InputError, match=r"--prompt 512 \+ --gen 200,000 = 200,512 tokens is longer than"
    ) as caught:
        plan_inference(model="llama-3.1-8b", on="h100", gen=200_000, levers=False)
    assert caught.value.hint == "Use --gen 130560 or less, or a shorter --prompt."
    with pytest.raises(InputError, match=r"--context 200000 is longer than"):  # given: named
        plan_inference(model="llama-3.1-8b", on="h100", context=200_000, levers=False)


def test_a_config_without_a_context_length_says_what_to_add(tmp_path: Path) -> None:
    """A config.json without max_position_embeddings said "--prompt 512 + --gen 128 = 640
    tokens is longer than x's 0-token context"; training plans need no context length."""
    config = {k: v for k, v in LLAMA_8B_CONFIG.items() if k != "max_position_embeddings"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(InputError, match="gives no context length") as caught:
        plan_inference(model=str(path), on="h100-sxm")
    assert "max_position_embeddings" in (caught.value.hint or "")
    assert plan_training(model=str(path), on="8x h100-sxm").fits
    given = tmp_path / "given" / "config.json"
    given.parent.mkdir()
    given.write_text(json.dumps({**config, "max_position_embeddings": 8192}), encoding="utf-8")
    assert plan_inference(model=str(given), on="h100-sxm").fits
