"""Engine rules (catalog/data/engine_rules.csv): each rule refuses what its source says the
engine refuses, lets through what it accepts, and a refused layout is never a lever."""

from __future__ import annotations

import pytest

from rigwise.api.infer import plan_inference
from rigwise.errors import InputError
from rigwise.estimate.engine_rules import compute_capability, engine_defaults, rules


def _plan(**options: object) -> object:
    return plan_inference(**{"prompt": 512, "gen": 128, "levers": False, **options})


def test_every_rule_has_a_source_and_a_known_kind() -> None:
    kinds = {"heads_divide", "kv_heads_divide", "min_compute_capability", "vendor", "quant",
             "kv_dtype", "weight_formats"}  # fmt: skip
    assert rules() and all(rule.source and rule.kind in kinds for rule in rules())


@pytest.mark.parametrize(
    ("options", "rule"),
    [
        # vLLM: 'Total number of attention heads (64) must be divisible by tensor parallel size (3)'
        (dict(model="llama-3-70b", on="3x rtx-3090", engine="vllm", quant="AWQ", tp=3),
         "tp-divides-attention-heads"),
        (dict(model="llama-3-70b", on="6x a100-sxm-80gb", engine="sglang", tp=6, quant="FP8"),
         "tp-divides-attention-heads"),
        # vLLM needs compute capability 7.5 (Pascal P40 is 6.1)
        (dict(model="llama-3-8b", on="p40", engine="vllm", quant="FP8"), "vllm-min-cc"),
        # FP8 weights need FP8 tensor cores in TensorRT-LLM (A100 has none)
        (dict(model="llama-3-8b", on="a100-sxm-80gb", engine="tensorrt-llm", quant="FP8"),
         "fp8-native"),
        # NVFP4 needs Blackwell
        (dict(model="llama-3-8b", on="h100-sxm", engine="vllm", quant="NVFP4"), "nvfp4-blackwell"),
    ],
)  # fmt: skip
def test_a_refused_layout_does_not_fit_and_names_its_rule(options: dict, rule: str) -> None:
    plan = _plan(**options)
    assert not plan.fits  # type: ignore[attr-defined]
    assert plan.broken_rule == rule  # type: ignore[attr-defined]
    assert rule in plan.reason  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "options",
    [
        dict(model="llama-3-70b", on="4x a100-sxm-80gb", engine="vllm", quant="FP8"),  # Marlin
        dict(model="llama-3-8b", on="rtx-4090", engine="tensorrt-llm", quant="FP8"),  # Ada
        dict(model="llama-3-8b", on="b200", engine="vllm", quant="NVFP4"),
        dict(model="llama-3-8b", on="8x h100-sxm", engine="vllm", tp=8),  # 8 KV heads, tp 8
        dict(model="qwen2.5-7b", on="8x h100-sxm", engine="vllm", tp=4),  # 28 heads, 4 KV
        dict(model="llama-3-70b", on="dgx-h100", nodes=2, network="ib-ndr", engine="vllm", tp=16),
        dict(model="llama-3-70b", on="3x rtx-3090", engine="llama.cpp"),  # layer split: no rule
    ],
)
def test_what_the_engine_accepts_passes(options: dict) -> None:
    assert _plan(**options).broken_rule == ""  # type: ignore[attr-defined]


def test_kv_heads_must_divide_or_be_divided() -> None:
    # qwen2.5-7b: 28 heads, 4 KV heads; tp 7 divides the 28 heads but neither 4 % 7 nor 7 % 4
    # is 0 (tp 16 on llama-3-70b's 8 KV heads copies each twice: accepted above).
    plan = _plan(model="qwen2.5-7b", on="7x a100-sxm-80gb", engine="vllm", tp=7)
    assert plan.broken_rule == "tp-kv-heads"  # type: ignore[attr-defined]


def test_a_refused_layout_is_never_a_lever() -> None:
    plan = plan_inference(
        model="llama-3-70b", on="2x rtx-3090", engine="vllm", quant="AWQ", prompt=512, gen=128
    )
    assert all(lever.change.get("on") != "3x rtx-3090" for lever in plan.levers)


def test_an_engine_of_another_vendor_is_bad_input_naming_the_rule() -> None:
    with pytest.raises(InputError, match="tensorrt-llm-nvidia-only"):
        _plan(model="llama-3-8b", on="mi300x", engine="tensorrt-llm")


@pytest.mark.parametrize(
    ("engine", "kv", "rule"),
    [("vllm", "q4_0", "vllm-kv-dtypes"), ("sglang", "q8_0", "sglang-kv-dtypes")],
)
def test_a_kv_dtype_the_engine_has_no_option_for_is_bad_input(
    engine: str, kv: str, rule: str
) -> None:
    # before: vLLM with a q4_0 KV cache (a llama.cpp block format; vLLM's --kv-cache-dtype is
    # auto or fp8) planned as fitting, with a smaller cache and faster decode
    with pytest.raises(InputError, match=rule) as caught:
        _plan(model="llama-3.1-8b", on="h100-sxm", engine=engine, kv_quant=kv)
    assert caught.value.message.startswith(
        f"--engine {engine} keeps its KV cache in f16, bf16, fp8"
    )
    for ok_engine, ok_kv in ((engine, "fp8"), (engine, "fp16"), ("llama.cpp", kv)):
        assert _plan(model="llama-3.1-8b", on="h100-sxm", engine=ok_engine, kv_quant=ok_kv).fits


@pytest.mark.parametrize(
    ("engine", "rule", "kinds"),
    [
        ("llama.cpp", "llamacpp-kv-dtypes", "f32, f16, bf16, q8_0"),
        ("ollama", "ollama-kv-dtypes", "f16, q8_0, q4_0"),
    ],
)
def test_a_gguf_engine_has_no_fp8_kv_cache(engine: str, rule: str, kinds: str) -> None:
    """'--engine llama.cpp --kv-quant fp8' planned (llama.cpp's --cache-type-k takes ggml types
    only: common/arg.cpp kv_cache_types; Ollama's OLLAMA_KV_CACHE_TYPE f16, q8_0, q4_0)."""
    with pytest.raises(InputError, match=rule) as caught:
        _plan(model="llama-3.1-8b", on="rtx-4090", engine=engine, kv_quant="fp8")
    assert caught.value.message.startswith(f"--engine {engine} keeps its KV cache in {kinds}")
    assert caught.value.hint == (
        "Use --kv-quant q8_0 (or leave it out for the engine's default), or --engine vllm, "
        "which takes fp8."
    )
    for kv in ("f16", "q8_0", "q4_0"):
        assert _plan(model="llama-3.1-8b", on="rtx-4090", engine=engine, kv_quant=kv).fits


def test_compute_capability_comes_from_the_data() -> None:
    assert compute_capability("p40") == 6.1
    assert compute_capability("h100-sxm") == 9.0
    assert compute_capability("rtx-4090") == 8.9
    assert compute_capability("mi300x") is None


def test_ollama_reserves_its_own_default_context_by_vram() -> None:
    # docs/context-length.mdx: < 24 GiB -> 4k, 24-48 GiB -> 32k
    assert engine_defaults("ollama", 12 * 2**30).default_context == 4096
    assert engine_defaults("ollama", 24 * 2**30).default_context == 32768
    assert engine_defaults("vllm", 80 * 2**30).default_context == 0
    plan = _plan(model="llama-3-8b", on="rtx-3060-12gb", engine="ollama")
    assert plan.workload.context == 4096  # type: ignore[attr-defined]


def test_a_model_defaults_to_the_format_it_is_released_in() -> None:
    """gpt-oss ships its experts in MXFP4 (config.json quantization_config), DeepSeek-V3 in
    block FP8; GGUF engines keep their own quant for DeepSeek (no native GGUF)."""
    assert _plan(model="gpt-oss-20b", on="rtx-4090").quant == "MXFP4_MOE"  # type: ignore[attr-defined]
    assert _plan(model="gpt-oss-120b", on="h100-sxm", engine="vllm").quant == "MXFP4_MOE"  # type: ignore[attr-defined]
    assert _plan(model="deepseek-v3", on="dgx-h200").quant == "FP8"  # type: ignore[attr-defined]
    assert _plan(model="deepseek-v3", on="dgx-h200", engine="llama.cpp").quant == "Q4_K_M"  # type: ignore[attr-defined]
    assert _plan(model="gpt-oss-20b", on="rtx-4090", quant="Q8_0").quant == "Q8_0"  # type: ignore[attr-defined]


def test_a_release_named_by_its_format_is_planned_in_it() -> None:
    """'zai-org/GLM-4.6-FP8' resolves to glm-4.6 (whose catalog checkpoint is BF16) and was
    planned in BF16 with no word of it: 88.2 GB of weights per RTX PRO 6000 at TP 8, 'tight'.
    The name typed picks the FP8 release where the engine loads it; llama.cpp keeps its GGUF."""
    rig = "8x rtx-pro-6000"
    for name in ("zai-org/GLM-4.6-FP8", "glm-4.6-fp8", "zai-org/GLM-4.5-FP8"):
        assert _plan(model=name, on=rig, engine="vllm").quant == "FP8"  # type: ignore[attr-defined]
    assert _plan(model="zai-org/GLM-4.6", on=rig, engine="vllm").quant == "BF16"  # type: ignore[attr-defined]
    assert _plan(model="glm-4.6-fp8", on=rig, engine="llama.cpp").quant == "Q4_K_M"  # type: ignore[attr-defined]
    assert _plan(model="glm-4.6-fp8", on=rig, engine="vllm", quant="BF16").quant == "BF16"  # type: ignore[attr-defined]


def test_ollama_offloads_layers_by_itself_llama_cpp_only_when_asked() -> None:
    """gpt-oss-20b (13.8 GB in MXFP4) on a 12 GB card: Ollama splits it with system RAM
    (engine_defaults.csv auto_offload); llama.cpp without --offload auto does not fit."""
    base = dict(model="gpt-oss-20b", on="rtx-3060-12gb", host="ryzen-9-7950x-ddr5-6000")
    ollama = _plan(**base, engine="ollama")
    assert ollama.fits and ollama.memory.host_offload_bytes > 1e9  # type: ignore[attr-defined]
    assert not _plan(**base, engine="llama.cpp").fits  # type: ignore[attr-defined]
    assert _plan(**base, engine="llama.cpp", offload="auto").fits  # type: ignore[attr-defined]


def test_a_host_beside_offload_none_is_bad_input() -> None:
    """'--host X --offload none' planned as if --host were not given (found by the break-it
    sweep): the host's RAM takes offloaded weights, and none are."""
    base = dict(model="gpt-oss-20b", on="rtx-3060-12gb", host="ryzen-9-7950x-ddr5-6000")
    for engine in ("llama.cpp", "ollama"):
        with pytest.raises(InputError, match="--offload none offloads nothing") as caught:
            _plan(**base, engine=engine, offload="none")
        assert caught.value.hint == "Use --offload auto, or drop --host."


def test_ollama_offload_without_a_host_plans_on_the_default_desktop_and_says_so() -> None:
    """No --host: Ollama still splits gpt-oss-20b with system RAM (it does so by itself), so
    the plan takes workload_defaults.csv's desktop host and a note names it; with the same
    host named, the same figures and no such note; --offload none is "does not fit"."""
    base = dict(model="gpt-oss-20b", on="rtx-3060-12gb", engine="ollama")
    bare = _plan(**base)
    named = _plan(**base, host="ryzen-9-7950x-ddr5-6000")
    assert bare.fits and bare.memory.host_offload_bytes > 1e9  # type: ignore[attr-defined]
    assert any("default desktop host ryzen-9-7950x-ddr5-6000" in n for n in bare.notes)  # type: ignore[attr-defined]
    assert not any("default desktop host" in n for n in named.notes)  # type: ignore[attr-defined]
    assert bare.decode.tokens_per_s == named.decode.tokens_per_s  # type: ignore[attr-defined]
    assert not _plan(**base, offload="none").fits  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("engine", "quant"),
    [("llama.cpp", "AWQ"), ("llama.cpp", "GPTQ"), ("ollama", "FP8"), ("llama.cpp", "INT8"),
     ("ollama", "NF4")],
)  # fmt: skip
def test_a_weight_format_a_gguf_engine_cannot_load_is_bad_input(engine: str, quant: str) -> None:
    # before: llama.cpp with AWQ planned as fitting (ggml.h has no AWQ/GPTQ/FP8/INT8/NF4 type)
    with pytest.raises(InputError, match="gguf-weight-types") as caught:
        _plan(model="llama-3.1-8b", on="rtx-4090", engine=engine, quant=quant)
    assert caught.value.message.startswith(f"--engine {engine} cannot load ")
    assert "--quant Q4_K_M" in (caught.value.hint or "")


@pytest.mark.parametrize("quant", ["Q4_K_M", "Q8_0", "IQ4_XS", "F16", "BF16", "MXFP4"])
def test_gguf_types_load_in_llama_cpp_and_other_formats_in_vllm(quant: str) -> None:
    assert _plan(model="llama-3.1-8b", on="rtx-4090", engine="llama.cpp", quant=quant).fits
    assert _plan(model="llama-3.1-8b", on="rtx-4090", engine="vllm", quant="AWQ").fits


@pytest.mark.parametrize(("kv", "bits"), [("q4_1", 5.0), ("q5_0", 5.5), ("f32", 32.0)])
def test_llama_cpps_other_cache_types_plan_at_their_block_sizes(kv: str, bits: float) -> None:
    """llama.cpp's --cache-type-k takes q4_1, q5_0 and f32 too (common/arg.cpp kv_cache_types;
    ggml-common.h blocks: 20 and 22 bytes per 32 values); rigwise refused them as unknown
    KV-cache dtypes while its refusal of fp8 listed them as what llama.cpp keeps."""
    base = dict(model="llama-3.1-8b", on="rtx-4090", engine="llama.cpp", context=32768)
    half = _plan(**base, kv_quant="f16").memory.kv_cache_bytes  # type: ignore[attr-defined]
    plan = _plan(**base, kv_quant=kv)
    assert plan.memory.kv_cache_bytes == pytest.approx(half * bits / 16)  # type: ignore[attr-defined]
    with pytest.raises(InputError) as caught:
        _plan(**base, kv_quant="fp8")
    listed = caught.value.message.split(" in ")[1].split(";")[0].split(", ")
    assert kv in listed and "q5_1" not in listed  # only what rigwise can plan is offered
