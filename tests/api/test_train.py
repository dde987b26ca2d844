"""``plan_training``: options, results, bad input, and fine-tuning memory vs published minimums."""

from __future__ import annotations

import csv

import pytest

from rigwise.api.train import plan_training
from rigwise.errors import InputError, UnknownNameError
from rigwise.serialize import to_jsonable
from rigwise.validation.training import DATA_DIR

UNSLOTH = list(
    csv.DictReader(
        line
        for line in (DATA_DIR / "unsloth_finetune_minimums.csv").open()
        if not line.startswith("#")
    )
)
# Unsloth's figures are absolute minimums (batch 1, short context, CPU-offloaded checkpoints);
# ours add the CUDA context and allocator slack, so we accept 0.85x-1.5x of the published value.
UNSLOTH_LOW, UNSLOTH_HIGH = 0.85, 1.5

TOP_KEYS = {
    "fits",
    "reason",
    "layout",
    "memory_per_gpu",
    "step",
    "tokens_per_s",
    "model_tflops_per_gpu",
    "mfu",
    "hfu",
    "time_to_train_s",
    "gpu_hours",
    "energy_kwh",
    "cost_usd",
}


def test_json_keys_are_the_documented_ones() -> None:
    plan = plan_training(
        model="llama-3.1-8b", on="8x h100-sxm", zero=3, micro_batch=1, global_batch=8, tokens="1B"
    )
    data = to_jsonable(plan)
    assert isinstance(data, dict)
    assert set(data) >= TOP_KEYS
    assert set(data["layout"]) >= {
        "tp",
        "pp",
        "dp",
        "cp",
        "ep",
        "vpp",
        "micro_batch",
        "global_batch",
        "zero",
        "recompute",
        "sequence_parallel",
    }
    assert set(data["memory_per_gpu"]) == {
        "weights_bytes",
        "gradients_bytes",
        "optimizer_bytes",
        "activations_bytes",
        "other_bytes",
        "total_bytes",
        "capacity_bytes",
        "total_bytes_interval",  # P10-P90 range (estimate/plan_intervals.py)
    }
    assert data["step"]["seconds"] == pytest.approx(
        sum(v for k, v in data["step"].items() if k.endswith("_s"))
    )


def test_time_energy_and_cost_follow_from_throughput() -> None:
    plan = plan_training(
        model="llama-3.1-8b", on="8x h100-sxm", zero=3, global_batch=8, tokens="1B", price=2.0
    )
    # The whole run divides the productive time by the goodput (0.9: Llama 3 paper).
    assert plan.goodput == pytest.approx(0.9)
    assert plan.time_to_train_s == pytest.approx(1e9 / plan.tokens_per_s / 0.9)
    assert plan.time_to_train_s is not None and plan.gpu_hours is not None
    assert plan.gpu_hours == pytest.approx(plan.time_to_train_s * 8 / 3600)
    assert plan.cost_usd == pytest.approx(plan.gpu_hours * 2.0)
    assert plan.energy_kwh is not None and plan.power_watts_per_gpu is not None
    assert plan.energy_kwh == pytest.approx(plan.gpu_hours * plan.power_watts_per_gpu / 1e3)


def test_steps_and_epochs_set_the_amount_of_work() -> None:
    by_steps = plan_training(
        model="llama-3.1-8b", on="8x h100-sxm", zero=3, global_batch=8, seq=2048, steps=100
    )
    by_epochs = plan_training(
        model="llama-3.1-8b",
        on="8x h100-sxm",
        zero=3,
        global_batch=8,
        seq=2048,
        epochs=2,
        dataset_tokens=819200,
    )
    assert by_steps.time_to_train_s == pytest.approx(by_epochs.time_to_train_s)


def test_layout_that_does_not_divide_is_a_result_not_an_exception() -> None:
    plan = plan_training(model="llama-3.1-8b", on="8x h100-sxm", tp=3)
    assert not plan.fits and "tp does not divide" in plan.reason


def test_full_fine_tune_on_one_consumer_gpu_does_not_fit_and_says_why() -> None:
    plan = plan_training(model="llama-3.1-8b", on="rtx-4090", method="full")
    assert not plan.fits and "GB per GPU" in plan.reason and "--zero 3" in plan.reason


def test_bad_input_names_the_value() -> None:
    with pytest.raises(UnknownNameError):
        plan_training(model="llama-3.1-8bb", on="rtx-4090")
    with pytest.raises(InputError, match="modle"):
        plan_training(modle="llama-3.1-8b", on="rtx-4090")
    with pytest.raises(InputError, match="precision"):
        plan_training(model="llama-3.1-8b", on="rtx-4090", precision="fp7")
    with pytest.raises(InputError, match="network"):
        plan_training(model="llama-3.1-8b", on="8x h100-sxm", nodes=2)


def test_calibration_changes_the_estimate() -> None:
    base = plan_training(model="llama-3.1-8b", on="8x h100-sxm", zero=3, global_batch=8)
    slow = plan_training(
        model="llama-3.1-8b",
        on="8x h100-sxm",
        zero=3,
        global_batch=8,
        calibration={"matmul_efficiency_bf16": 0.25},
    )
    assert slow.step is not None and base.step is not None
    assert slow.step.seconds > 1.5 * base.step.seconds


@pytest.mark.parametrize("row", UNSLOTH, ids=[f"{r['model']}-{r['method']}" for r in UNSLOTH])
def test_fine_tuning_memory_agrees_with_unsloth_minimums(row: dict[str, str]) -> None:
    # Unsloth Requirements page, fine-tuning VRAM table (source column of the CSV).
    plan = plan_training(
        model=row["model"], on="b200", method=row["method"], seq=512, global_batch=1
    )
    assert plan.memory_per_gpu is not None
    ratio = plan.memory_per_gpu.total_bytes / (float(row["min_vram_gb"]) * 1e9)
    assert UNSLOTH_LOW <= ratio <= UNSLOTH_HIGH


def test_cluster_file_and_mixed_nodes(tmp_path: object) -> None:
    from pathlib import Path

    folder = Path(str(tmp_path))
    same = folder / "same.yaml"
    same.write_text('nodes:\n  - on: "8x h100-sxm"\n    count: 2\nnetwork: ib-ndr\n')
    plan = plan_training(model="llama-3.1-8b", cluster=str(same), zero=3, global_batch=16)
    assert plan.gpus == 16 and plan.fits
    mixed = folder / "mixed.yaml"
    mixed.write_text('nodes:\n  - on: "rtx-4090"\n  - on: "rtx-3090"\nnetwork: 10gbe\n')
    with pytest.raises(InputError, match="identical accelerators"):
        plan_training(model="llama-3.1-8b", cluster=str(mixed))


def test_optimizer_offload_frees_gpu_memory() -> None:
    kept = plan_training(model="llama-3.1-8b", on="8x h100-sxm", global_batch=8)
    offloaded = plan_training(
        model="llama-3.1-8b", on="8x h100-sxm", global_batch=8, offload="optimizer"
    )
    assert kept.memory_per_gpu is not None and offloaded.memory_per_gpu is not None
    assert offloaded.memory_per_gpu.optimizer_bytes == 0.0 < kept.memory_per_gpu.optimizer_bytes


def test_expert_parallelism_splits_experts_and_adds_all_to_all() -> None:
    common = {"global_batch": 8, "recompute": "full", "offload": "optimizer"}
    one = plan_training(model="mixtral-8x7b", on="8x h100-sxm", zero=3, ep=1, **common)
    ep = plan_training(model="mixtral-8x7b", on="8x h100-sxm", zero=1, ep=8, **common)
    assert one.step is not None and ep.step is not None
    assert one.step.parts["ep_comm_s"] == 0.0 < ep.step.parts["ep_comm_s"]
    assert ep.memory_per_gpu is not None and ep.memory_per_gpu.weights_bytes < 30e9
    assert ep.step.seconds > 0 and ep.tokens_per_s > 0


def test_objectives_and_top_n() -> None:
    for objective in ("time", "cost", "energy"):
        plan = plan_training(
            model="llama-3.1-8b",
            on="8x h100-sxm",
            global_batch=16,
            search=True,
            top=2,
            objective=objective,
        )
        assert plan.fits and len(plan.alternatives) == 1
        assert plan.search is not None and plan.search.objective == objective


def test_fp8_training_on_a_part_without_fp8_tensor_cores_is_bad_input() -> None:
    with pytest.raises(InputError, match="a100-sxm-80gb has no FP8 tensor cores") as info:
        plan_training(model="llama-3.2-1b", on="a100-sxm-80gb", precision="fp8")
    assert "--precision bf16" in (info.value.hint or "")


def test_mxfp8_needs_blackwell_and_plans_there() -> None:
    with pytest.raises(InputError, match=r"h100-sxm has 9\.0"):
        plan_training(model="llama-3.2-1b", on="h100-sxm", precision="fp8", float8_scaling="mxfp8")
    plan = plan_training(model="llama-3.2-1b", on="b200", precision="fp8", float8_scaling="mxfp8")
    assert plan.fits


def test_expert_parallel_on_a_dense_model_is_bad_input_as_in_infer() -> None:
    # before: exit 1, "does not fit: ep does not divide the experts or dp" (infer: bad input)
    with pytest.raises(InputError, match=r"--ep 2 asks for expert parallel, but llama-3\.1-8b"):
        plan_training(model="llama-3.1-8b", on="4x h100-sxm", ep=2)
    assert plan_training(model="llama-3.1-8b", on="4x h100-sxm", ep=1).fits


def test_a_layout_larger_than_the_rig_says_how_many_gpus_it_needs() -> None:
    # before: "GPUs not divisible by tp x pp x cp; ... (layout tp=2 pp=1 dp=8 cp=1 mb=1 on 16
    # GPUs)" for 8 GPUs, and the default global batch (4) was from the rig's 8 GPUs, not dp 8
    plan = plan_training(model="llama-3.1-8b", on="8x h100-sxm", tp=2, dp=8)
    assert not plan.fits
    assert plan.reason.startswith("the layout needs 16 GPUs; the rig has 8 (layout tp=2")
    assert "not divisible by tp x pp x cp" not in plan.reason
    assert plan.layout is not None and plan.layout.global_batch == 8  # a micro-batch per rank


def test_a_layout_that_fits_the_rig_keeps_the_divisibility_reason() -> None:
    plan = plan_training(model="llama-3.1-8b", on="8x h100-sxm", tp=3, pp=1, dp=2)
    assert not plan.fits and plan.reason.startswith("GPUs not divisible by tp x pp x cp")


@pytest.mark.parametrize("sizes", [{"dp": 16}, {"tp": 4, "pp": 4}])
def test_a_search_with_sizes_larger_than_the_rig_says_how_many_gpus_they_need(
    sizes: dict[str, int],
) -> None:
    # before: "no layout of 8 GPUs works: 11520 GPUs not divisible by tp x pp x cp" (--dp 16)
    plan = plan_training(model="llama-3.1-8b", on="8x h100-sxm", search=True, **sizes)
    assert not plan.fits
    assert plan.reason == (
        "no layout of 8 GPUs works: the sizes given (tp x pp x cp x dp) need 16 GPUs; the rig has 8"
    )
    within = plan_training(model="llama-3.1-8b", on="8x h100-sxm", search=True, tp=3)
    assert "GPUs not divisible by tp x pp x cp" in within.reason  # a size within the rig


def test_epochs_times_a_dataset_past_a_float_is_bad_input() -> None:
    # before: 'fits' with time_to_train_s null (1e300 x 1e300 tokens is inf)
    with pytest.raises(InputError, match="more tokens than a number holds"):
        plan_training(model="llama-3.1-8b", on="8x h100-sxm", epochs=1e300, dataset_tokens=1e300)


@pytest.mark.parametrize(
    ("work", "message"),
    [
        ({"tokens": 2e12, "steps": 100}, "--tokens and --steps each say how much to train"),
        ({"tokens": 2e12, "epochs": 2, "dataset_tokens": 1e9}, "--tokens and --epochs each"),
        ({"steps": 100, "epochs": 2, "dataset_tokens": 1e9}, "--steps and --epochs each"),
        ({"dataset_tokens": 1e9}, "--dataset-tokens needs --epochs"),
    ],
)
def test_two_amounts_of_work_are_bad_input(work: dict[str, float], message: str) -> None:
    # before: '--tokens 2T --steps 100' planned 2T tokens, --steps dropped without a word
    # ('--dataset-tokens 1B' alone: no time to train, no word)
    with pytest.raises(InputError, match=message):
        plan_training(model="llama-3.1-8b", on="8x h100-sxm", zero=3, **work)
