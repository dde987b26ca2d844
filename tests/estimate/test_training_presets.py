"""Framework presets, sharded LoRA, pure bf16, goodput and the power curve."""

from __future__ import annotations

import csv

import pytest

from rigwise.api.train import plan_training
from rigwise.errors import InputError
from rigwise.estimate.power import power_point
from rigwise.estimate.training_presets import framework_settings, frameworks
from rigwise.validation.training_cases import DATA_DIR, rows
from rigwise.validation.training_finetune import plan_row, predicted_gib

UNSLOTH = DATA_DIR / "unsloth_finetune_minimums.csv"
# Published fine-tuning runs planned with a framework preset (finetune_memory_runs.csv rows
# with a `framework`; each row's `source` names the page and its table or sentence).
PRESET_RUNS = [row for row in rows(DATA_DIR, "finetune_memory_runs.csv") if row["framework"]]
# Presets whose memory is checked against a published figure by a test of their own below.
CHECKED_ELSEWHERE = {"unsloth", "torchtitan", "megatron", "deepspeed"}


def test_every_framework_of_the_issue_has_a_preset_with_a_source() -> None:
    wanted = {"torchtune", "unsloth", "hf-trainer", "axolotl", "litgpt"}
    wanted |= {"deepspeed", "megatron", "nemo", "torchtitan"}
    assert wanted <= set(frameworks())
    for name in wanted:
        assert framework_settings(name, "lora", 1)


def test_scopes_layer_single_multi_and_method() -> None:
    single = framework_settings("torchtune", "full", 1)
    multi = framework_settings("torchtune", "full", 8)
    assert single["optimizer_in_backward"] is True and "zero" not in single
    assert multi["zero"] == 3 and "optimizer_in_backward" not in multi
    assert framework_settings("litgpt", "lora", 1)["recompute"] == "none"
    assert framework_settings("litgpt", "lora", 4)["recompute"] == "full"


def test_explicit_flags_override_the_preset() -> None:
    plan = plan_training(
        model="llama-3.1-8b", on="rtx-4090", method="lora", framework="unsloth", lora_rank=64
    )
    preset = plan_training(model="llama-3.1-8b", on="rtx-4090", method="lora", framework="unsloth")
    assert plan.memory_per_gpu is not None and preset.memory_per_gpu is not None
    assert plan.memory_per_gpu.gradients_bytes == pytest.approx(
        4 * preset.memory_per_gpu.gradients_bytes
    )


def test_unknown_framework_is_bad_input_naming_the_choices() -> None:
    with pytest.raises(InputError, match="torchtune"):
        plan_training(model="llama-3.1-8b", on="rtx-4090", framework="torchtun")


@pytest.mark.parametrize(
    "row", list(csv.DictReader(line for line in UNSLOTH.open() if not line.startswith("#")))
)
def test_unsloth_preset_memory_against_its_published_minimum(row: dict[str, str]) -> None:
    """Unsloth's published minimum VRAM (docs requirements table; not a fit row)."""
    plan = plan_training(
        model=row["model"],
        method=row["method"],
        on="h100-sxm",
        framework="unsloth",
        seq=512,
        global_batch=1,
    )
    assert plan.memory_per_gpu is not None
    measured = float(row["min_vram_gb"]) * 1e9
    assert plan.memory_per_gpu.total_bytes == pytest.approx(measured, rel=0.25)


def test_fsdp_shards_the_frozen_base_of_lora_and_qlora() -> None:
    common = {"model": "llama-3.1-70b", "on": "8x h100-sxm", "global_batch": 8}
    # Every layout flag fixed: the unsharded plan does not fit and must not be searched away.
    common |= {"tp": 1, "pp": 1, "cp": 1, "ep": 1, "vpp": 1, "micro_batch": 1}
    common |= {"sequence_parallel": False}
    for method, per_param in (("lora", 2.0), ("qlora", 0.52)):
        kept = plan_training(**common, method=method, zero=0, recompute="full")
        sharded = plan_training(**common, method=method, zero=3, recompute="full")
        assert kept.memory_per_gpu is not None and sharded.memory_per_gpu is not None
        full = kept.memory_per_gpu.weights_bytes
        assert full > 70.6e9 * per_param * 0.95
        assert kept.fits == (method == "qlora")
        # One eighth of the base, plus two gathered layers, the tiny adapters and the root
        # FSDP unit kept unsharded: bf16 embedding and output head (2 x 128256 x 8192); QLoRA
        # also holds one dequantised bf16 MLP matrix (8192 x 28672).
        root = 2 * 128256 * 8192 * 2.0
        dequant = 8192 * 28672 * 2.0 if method == "qlora" else 0.0
        bound = full / 8 + 2.5e9 * per_param + root + dequant
        assert sharded.memory_per_gpu.weights_bytes < bound
        assert sharded.fits


def test_pure_bf16_keeps_8_bytes_of_state_per_parameter_not_18() -> None:
    common = {"model": "llama-3.1-8b", "on": "h200", "method": "full", "recompute": "full"}
    mixed = plan_training(**common, global_batch=1)
    pure = plan_training(**common, global_batch=1, pure_bf16=True)
    assert mixed.memory_per_gpu is not None and pure.memory_per_gpu is not None
    m, p = mixed.memory_per_gpu, pure.memory_per_gpu
    params = 8.03e9
    assert m.gradients_bytes + m.optimizer_bytes == pytest.approx(16 * params, rel=0.01)
    assert p.gradients_bytes + p.optimizer_bytes == pytest.approx(6 * params, rel=0.01)


def test_optimizer_in_backward_keeps_only_the_largest_gradient() -> None:
    common = {"model": "llama-3.1-8b", "on": "h200", "method": "full", "pure_bf16": True}
    plan = plan_training(**common, optimizer_in_backward=True)
    assert plan.memory_per_gpu is not None
    # The largest tensor is the 128256 x 4096 embedding: 525M bf16 gradients.
    assert plan.memory_per_gpu.gradients_bytes == pytest.approx(128256 * 4096 * 2, rel=0.01)


@pytest.mark.parametrize(("device", "tdp"), [("h100-sxm", 700.0), ("rtx-3090", 350.0)])
def test_energy_falls_as_the_power_cap_falls(device: str, tdp: float) -> None:
    points = [
        power_point(device, tdp, tdp * f, exponent=0.33, utilisation=0.8)
        for f in (1.0, 0.9, 0.8, 0.7, 0.6)
    ]
    speeds = [p.relative_throughput for p in points]
    energy = [p.drawn_watts / p.relative_throughput for p in points]
    assert speeds == sorted(speeds, reverse=True) and speeds[0] == 1.0
    assert energy == sorted(energy, reverse=True) and energy[-1] < 0.85 * energy[0]


def test_train_energy_falls_with_the_cap() -> None:
    common = {"model": "llama-3.1-8b", "on": "rtx-3090", "method": "qlora", "tokens": "10M"}
    stock = plan_training(**common)
    capped = plan_training(**common, power_limit=200)
    assert stock.energy_kwh is not None and capped.energy_kwh is not None
    assert capped.energy_kwh < stock.energy_kwh
    assert capped.time_to_train_s is not None and stock.time_to_train_s is not None
    assert capped.time_to_train_s > stock.time_to_train_s


def test_goodput_stretches_time_and_cost() -> None:
    common = {"model": "llama-3.1-8b", "on": "8x h100-sxm", "zero": 3, "tokens": "1B"}
    ideal = plan_training(**common, goodput=1.0, price=2.0)
    real = plan_training(**common, goodput=0.8, price=2.0)
    assert real.gpu_hours == pytest.approx(ideal.gpu_hours / 0.8)
    assert real.cost_usd == pytest.approx(ideal.cost_usd / 0.8)


def test_torchtitan_preset_memory_against_its_published_table() -> None:
    """torchtitan 2024-12 Table 1: Llama 3.1 8B, FSDP on 8 H100 (96 GB), local batch 2 at
    8192 tokens, eager: 82.4 GiB peak (a torchtitan memory row no factor was fitted on)."""
    plan = plan_training(
        model="llama-3.1-8b",
        on="8x h100-sxm",
        framework="torchtitan",
        seq=8192,
        global_batch=16,
        micro_batch=2,
        embedding_own_unit=False,  # Dec 2024: the embedding sat in the root unit (PR #1094 later)
    )
    assert plan.layout is not None and plan.layout.zero == 3
    assert plan.layout.recompute == "selective" and plan.memory_per_gpu is not None
    assert plan.memory_per_gpu.total_bytes / 2**30 == pytest.approx(82.4, rel=0.10)


def test_torchtitan_preset_reshards_the_embedding_after_the_forward() -> None:
    """Current torchtitan wraps tok_embeddings in an FSDP unit of its own (PR #1094): against
    the embedding kept in the root unit, each of 8 GPUs holds the Llama 3.1 8B embedding's 1/8
    bf16 shard, not all of it: 128256 x 4096 x 2 bytes x 7/8 = 919,339,008 bytes less."""
    assert framework_settings("torchtitan", "pretrain", 8)["embedding_own_unit"] is True
    kw = {"model": "llama-3.1-8b", "on": "8x h100-sxm", "framework": "torchtitan", "seq": 8192}
    own, root = plan_training(**kw), plan_training(**kw, embedding_own_unit=False)
    assert own.memory_per_gpu is not None and root.memory_per_gpu is not None
    saved = root.memory_per_gpu.weights_bytes - own.memory_per_gpu.weights_bytes
    assert saved == pytest.approx(919_339_008)


def test_a_preset_zero_stage_on_one_replica_is_a_no_op_not_an_error() -> None:
    plan = plan_training(model="llama-3.1-8b", on="8x h100-sxm", framework="megatron", tp=8)
    assert plan.fits and plan.layout is not None and plan.layout.dp == 1


def test_megatron_preset_state_memory_against_korthikanti_figure_1() -> None:
    """Korthikanti et al. 2022 Fig. 1: 22B GPT on 8 A100 with TP 8 keeps 45.56 GiB of weights,
    gradients and optimizer state per GPU (bf16 weights, fp32 main grads, master weights and
    Adam moments: Megatron's 18 bytes per parameter)."""
    plan = plan_training(
        model="megatron-gpt-22b",
        on="8x a100-sxm-80gb",
        framework="megatron",
        tp=8,
        pp=1,
        dp=1,
        micro_batch=4,
        global_batch=4,
        seq=2048,
    )
    mem = plan.memory_per_gpu
    assert mem is not None
    state = mem.weights_bytes + mem.gradients_bytes + mem.optimizer_bytes
    assert state / 2**30 == pytest.approx(45.5625, rel=0.03)


def test_deepspeed_preset_with_zero_offload_fits_13b_on_one_v100() -> None:
    """Ren et al. 2021 (ZeRO-Offload): 13B parameters train on one 32 GB V100 once optimizer
    state and gradients live on the host; PyTorch alone stops at 1.4B."""
    common = {
        "model": "llama-2-13b",
        "on": "v100-sxm2-32gb",
        "framework": "deepspeed",
        "precision": "fp16",
        "seq": 1024,
        "micro_batch": 1,
        "global_batch": 1,
        "recompute": "full",
    }
    offloaded = plan_training(**common, offload="optimizer")  # type: ignore[arg-type]
    assert offloaded.fits and offloaded.memory_per_gpu is not None
    assert offloaded.memory_per_gpu.gradients_bytes < 0.05 * offloaded.memory_per_gpu.weights_bytes
    assert not plan_training(**common).fits  # type: ignore[arg-type]


# Published rows rigwise misses by more than the tolerance, with what is known of why (kept as
# strict xfails so that a fix shows).
KNOWN_MISSES = {
    "HF Trainer+PEFT 2x Llama-2 70B QLoRA FSDP offload bs2 ctx2048": (
        "rigwise keeps what FSDP holds on the GPU under CPU offload (two NF4 blocks, the bf16 "
        "root unit of embedding and head, one dequantised bf16 matrix, the NF4 constants FSDP "
        "does not own) plus the checkpointed activations and logits: 13.6 GiB, 25 % under the "
        "PEFT docs' 19.6 GB. The same run without offload is 6 % low and Answer.AI's offloaded "
        "70B QLoRA row 10 % low (against its reserved memory), so ~4.6 GiB more stay on the "
        "GPU in the HF Trainer offload run alone: unexplained"
    ),
    "Axolotl 2x gpt-oss-20b full FSDP2 offload bs1 ctx4096 packed": (
        "rigwise keeps the gathered blocks, the root unit (201k-vocab embedding and head, 2.2 "
        "GiB), the head's and two blocks' unsharded gradients, and no logits (Cut "
        "Cross-Entropy): 10.7 GiB reserved on each GPU against axolotl's ~21 GiB (49 % low): "
        "unexplained. Not modelled: the eager per-expert loop of transformers' GptOssExperts "
        "in training, whose select backward materialises full-size expert gradients"
    ),
    "Axolotl 8x gpt-oss-20b full FSDP2 bs1 ctx4096 packed": (
        "26.2 GiB reserved against ~36 (27 % low); the 4-GPU run of the same config is 9 % "
        "low. "
        "Going from 4 to 8 GPUs saves 10 GiB per GPU in axolotl's README against rigwise's "
        "15.5 GiB of halved shards: unexplained (the reserved pool may cache more on the "
        "80 GB GPUs of the 4-GPU run)"
    ),
}


def _preset_case(row: dict[str, str]) -> object:
    reason = KNOWN_MISSES.get(row["run"])
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(row, id=row["run"], marks=marks)


@pytest.mark.parametrize("row", [_preset_case(row) for row in PRESET_RUNS])
def test_framework_preset_memory_against_published_runs(row: dict[str, str]) -> None:
    """A framework's published peak memory per GPU for a stated config (independent rows: no
    factor was fitted on them), planned with ``--framework`` plus the settings the config
    states; within 15 %. Sources (each row's ``source``): torchtune's LoRA and Llama3
    tutorials; LitGPT prepare_dataset.md (Falcon 7B, Alpaca cut at 256 tokens,
    max_memory_allocated); axolotl's gpt-oss README (device_mem_reserved, LoRA and full
    fine-tunes); the PEFT docs' HF
    Trainer runs of Llama-2 70B QLoRA with FSDP and with DeepSpeed ZeRO-3; NeMo 1.x GPT-Next
    1B/5B/7B pretraining on a DGX-A100 with the distributed optimizer, selective recompute and
    TP 1-8 (shjwudp's 2023 memory-estimation post, max_memory_allocated)."""
    plan = plan_row(row)
    assert plan.notes[0].startswith(f"{row['framework']} defaults")
    assert plan.fits and plan.memory_per_gpu is not None
    predicted = predicted_gib(row, plan.memory_per_gpu)
    assert predicted == pytest.approx(float(row["value"]), rel=0.15)


def test_axolotl_full_fine_tunes_in_pure_bf16() -> None:
    # axolotl loads the model in cfg.torch_dtype (bfloat16 with bf16: true): no fp32 master.
    assert framework_settings("axolotl", "full", 8)["pure_bf16"] is True
    assert framework_settings("axolotl", "lora", 1)["pure_bf16"] is False


def test_preset_runs_cover_the_framework_presets_of_issue_14() -> None:
    wanted = {"torchtune", "litgpt", "axolotl", "hf-trainer", "deepspeed", "nemo"}
    assert {row["framework"] for row in PRESET_RUNS} >= wanted


def test_every_preset_has_a_published_memory_check() -> None:
    checked = {row["framework"] for row in PRESET_RUNS} | CHECKED_ELSEWHERE
    assert set(frameworks()) <= checked


def test_megatron_selective_recompute_with_fused_attention_keeps_the_layer() -> None:
    """Megatron-Core/NeMo selective recompute checkpoints the attention core (recompute_modules
    ["core_attn"]); fused attention already stores no s^2 scores and the core's inputs Q, K, V
    stay stored, so the layer keeps 16h + 8f bytes per token as without recompute (the NeMo
    rows above: 52.4 GiB for GPT-Next 5B either way). torchtitan's per-op SAC recomputes the
    elementwise ops and keeps less."""
    kw = {"model": "nemo-gptnext-5b", "on": "8x a100-sxm-80gb", "framework": "nemo", "seq": 2048}
    kw |= {"tp": 1, "pp": 1, "cp": 1, "ep": 1, "vpp": 1, "dp": 8, "micro_batch": 2}
    kw |= {"global_batch": 16, "sequence_parallel": False}
    none = plan_training(**kw, recompute="none")
    core = plan_training(**kw, recompute="selective")
    per_op = plan_training(**kw, recompute="selective", selective_policy="op")
    assert none.memory_per_gpu and core.memory_per_gpu and per_op.memory_per_gpu
    stored = core.memory_per_gpu.activations_bytes
    assert stored == pytest.approx(none.memory_per_gpu.activations_bytes)
    # 24 layers x 4096 tokens x (16h + 8f + an fp32 log-sum-exp per head), plus the logits at
    # the eager cross-entropy's 12 bytes each over the 50304-token padded vocabulary (PyTorch's
    # log_softmax + nll_loss; Megatron's in-place vocab-parallel loss is not told apart).
    layers = 24 * 2 * 2048 * (16 * 4096 + 8 * 10880 + 4 * 32)
    assert stored == pytest.approx(layers + 2 * 2048 * 50304 * 12.0)
    assert per_op.memory_per_gpu.activations_bytes < 0.7 * stored


@pytest.mark.parametrize("name", ["Unsloth", "UNSLOTH", "HF Trainer", "hf_trainer"])
def test_a_framework_reads_as_people_type_it(name: str) -> None:
    # before: "Unknown framework 'Unsloth'. Use one of: unsloth, ..."
    assert framework_settings(name, "lora", 1)
