"""Step time parts on hand-made hardware: bubble, collectives, overlap, power cap, calibration."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from rigwise.errors import InputError
from rigwise.estimate.compute import shape_efficiency, training_factors
from rigwise.estimate.training import evaluate, model_flops_per_token
from rigwise.estimate.training_layout import Layout, LayoutArrays, Workload, geometry
from rigwise.estimate.training_step import Fabric, StepArrays, _layer, estimate_step
from rigwise.hardware import Accelerator, Link
from rigwise.models import load_model
from rigwise.plans import STEP_PARTS
from rigwise.validation.training import gpt_spec

GPU = Accelerator(
    id="a100-sxm-80gb",
    name="test A100",
    vendor="nvidia",
    kind="gpu",
    memory_bytes=80e9,
    memory_type="hbm2e",
    memory_bandwidth_bytes_per_s=2.0e12,
    flops={"bf16": 312e12, "fp16": 312e12},
    vector_fp32_flops=19.5e12,
    tdp_watts=400.0,
)
NVSWITCH = Link(id="nvs", name="nvs", kind="nvswitch", bandwidth_bytes_per_s=300e9, latency_s=3e-6)
IB = Link(id="ib", name="ib", kind="infiniband", bandwidth_bytes_per_s=25e9, latency_s=5e-6)
FABRIC = Fabric(GPU, 8, NVSWITCH, IB, 8)
FACTORS = training_factors(GPU.id)


def gpt() -> object:
    return gpt_spec(6144, 64, 48, 51200, 2048, "gpt-22b-test")


def llama() -> object:
    return load_model("llama-3.1-8b")


WORK = Workload(seq_len=2048, global_batch=64, flash_attention=False, dropout=True)


def step(
    spec: object = None, work: Workload = WORK, fabric: Fabric = FABRIC, **kw: object
) -> dict[str, float]:
    geo = geometry(spec or gpt())
    lay = LayoutArrays.from_layouts([Layout(**kw)])  # type: ignore[arg-type]
    result = estimate_step(geo, work, lay, fabric, FACTORS)
    return {name: float(value[0]) for name, value in result.parts.items()} | {
        "seconds": float(result.seconds[0])
    }


def test_bubble_is_p_minus_one_over_v_microbatch_times() -> None:
    flat = step(tp=8, pp=1, micro_batch=1)
    piped = step(tp=8, pp=4, micro_batch=1)
    inter = step(tp=8, pp=4, vpp=2, micro_batch=1)
    per_microbatch = (piped["compute_s"] + piped["memory_bound_s"] + piped["tp_comm_s"]) / 64
    assert piped["pp_bubble_s"] == pytest.approx(3 * per_microbatch, rel=0.05)
    assert inter["pp_bubble_s"] == pytest.approx(piped["pp_bubble_s"] / 2, rel=1e-6)
    assert flat["pp_bubble_s"] == 0.0


def test_no_tensor_parallel_traffic_without_tp() -> None:
    assert step(tp=1, micro_batch=1)["tp_comm_s"] == 0.0
    assert step(tp=8, micro_batch=1)["tp_comm_s"] > 0.0


def test_full_recompute_costs_about_one_more_forward() -> None:
    none = step(tp=8, micro_batch=1)
    full = step(tp=8, micro_batch=1, recompute="full")
    # One more forward: a third of fwd+bwd GEMM/attention time plus the forward elementwise work.
    forward = (none["compute_s"] + none["memory_bound_s"]) / 3
    assert full["recompute_s"] == pytest.approx(forward, rel=0.15)


def test_overlap_hides_the_data_parallel_reduction() -> None:
    exposed = step(dp=8, micro_batch=8, work=dataclasses.replace(WORK, overlap_grad_reduce=False))
    hidden = step(dp=8, micro_batch=8)
    assert exposed["dp_comm_s"] > 0.0
    assert hidden["dp_comm_s"] < exposed["dp_comm_s"]


def test_dp_over_the_network_is_slower_than_inside_a_node() -> None:
    work = dataclasses.replace(WORK, overlap_grad_reduce=False)
    inside = step(dp=8, micro_batch=8, work=work)
    across = step(tp=8, dp=8, micro_batch=1, work=work)  # DP peers sit on 8 different nodes
    assert across["dp_comm_s"] / 8 > inside["dp_comm_s"] / 64  # per byte, IB is slower


def test_zero3_adds_gathers_and_no_separate_reduction() -> None:
    z3 = step(
        dp=8, micro_batch=8, zero=3, work=dataclasses.replace(WORK, overlap_grad_reduce=False)
    )
    assert z3["zero3_comm_s"] > 0.0 and z3["dp_comm_s"] == 0.0


def test_power_cap_slows_compute_by_the_cube_root() -> None:
    capped = dataclasses.replace(FABRIC, power_limit_watts=200.0)
    full, slow = step(micro_batch=1), step(micro_batch=1, fabric=capped)
    assert slow["compute_s"] / full["compute_s"] == pytest.approx(
        2**FACTORS.power_cap_exponent, rel=1e-3
    )


def test_context_parallel_and_experts_only_cost_when_used() -> None:
    work = Workload(seq_len=32768, global_batch=8)
    parts = step(llama(), work, cp=1, micro_batch=1)
    assert parts["cp_comm_s"] == 0.0 and parts["ep_comm_s"] == 0.0


def test_thin_gemms_run_less_efficiently() -> None:
    eff = shape_efficiency(np.array([256, 1024, 8192]), FACTORS)
    assert eff[0] < eff[1] < eff[2] < 1.0


def test_calibration_overrides_the_catalog_and_rejects_unknown_keys() -> None:
    assert training_factors(GPU.id, {"matmul_efficiency_bf16": 0.5}).matmul_efficiency_bf16 == 0.5
    with pytest.raises(InputError, match="matmul_efficency"):
        training_factors(GPU.id, {"matmul_efficency": 0.5})


def test_mfu_uses_palm_flops_and_hfu_counts_recompute() -> None:
    geo = geometry(gpt())
    work = WORK
    flops = model_flops_per_token(geo, work)
    n = geo.params_active
    assert flops == pytest.approx(6 * n + 12 * 48 * 6144 * 2048)
    lay = LayoutArrays.from_layouts([Layout(tp=8, micro_batch=1, recompute="full")])
    ev = evaluate(geo, work, lay, FABRIC, FACTORS)
    assert float(ev.hfu[0]) > float(ev.mfu[0]) * 1.25


FP8_GPU = dataclasses.replace(GPU, flops={"bf16": 312e12, "fp16": 312e12, "fp8": 624e12})
FP8_FABRIC = Fabric(FP8_GPU, 8, NVSWITCH, IB, 8)
FLASH = Workload(seq_len=4096, global_batch=8)


def test_async_tp_hides_the_fitted_share_of_tensor_parallel_time() -> None:
    plain = step(llama(), FLASH, tp=8, micro_batch=1)
    overlapped = step(llama(), dataclasses.replace(FLASH, async_tp=True), tp=8, micro_batch=1)
    assert overlapped["tp_comm_s"] == pytest.approx(
        (1 - FACTORS.async_tp_overlap) * plain["tp_comm_s"], rel=1e-9
    )


def test_float8_tensorwise_sends_the_tp_all_gathers_in_fp8() -> None:
    fp8 = dataclasses.replace(FLASH, precision="fp8")
    rowwise = dataclasses.replace(fp8, float8_scaling="rowwise")
    tensorwise_parts = step(llama(), fp8, FP8_FABRIC, tp=8, micro_batch=1)
    rowwise_parts = step(llama(), rowwise, FP8_FABRIC, tp=8, micro_batch=1)
    # All-gathers at 1 byte, reduce-scatters at 2: 3/4 of the bf16 volume.
    assert tensorwise_parts["tp_comm_s"] == pytest.approx(0.75 * rowwise_parts["tp_comm_s"])
    assert FACTORS.matmul_efficiency("fp8", "rowwise") == FACTORS.matmul_efficiency_fp8_rowwise


def test_mxfp8_gathers_in_bf16_and_runs_its_gemms_at_the_mxfp8_factor() -> None:
    # torchtitan docs/mxfp8.md: all distributed communication for MXFP8 training is done in
    # high precision, so the TP all-gathers move what rowwise (bf16) moves, not 3/4 of it.
    fp8 = dataclasses.replace(FLASH, precision="fp8")
    mx = step(llama(), dataclasses.replace(fp8, float8_scaling="mxfp8"), FP8_FABRIC, tp=8)
    rowwise = step(llama(), dataclasses.replace(fp8, float8_scaling="rowwise"), FP8_FABRIC, tp=8)
    assert mx["tp_comm_s"] == pytest.approx(rowwise["tp_comm_s"], rel=1e-12)
    assert FACTORS.matmul_efficiency("fp8", "mxfp8") == FACTORS.matmul_efficiency_fp8_mxfp8
    assert FACTORS.matmul_efficiency("bf16", "mxfp8") == FACTORS.matmul_efficiency_bf16


def test_per_op_sac_recomputes_every_second_matmul_and_its_all_gathers() -> None:
    op = dataclasses.replace(FLASH, selective_policy="op")
    megatron = step(llama(), FLASH, tp=8, micro_batch=1, recompute="selective")
    per_op = step(llama(), op, tp=8, micro_batch=1, recompute="selective")
    # Llama 3.1 8B: k, o and up projections are ~37% of the layer's forward GEMM FLOPs.
    gemm_fwd = (per_op["recompute_s"] - megatron["recompute_s"]) / 0.365
    assert 0.0 < gemm_fwd < megatron["compute_s"] / 3
    # Two more all-gathers per layer: 10 instead of 8 half all-reduces.
    assert per_op["tp_comm_s"] == pytest.approx(1.25 * megatron["tp_comm_s"])


def test_per_op_sac_recomputes_an_attention_missing_from_its_save_list() -> None:
    # cuDNN SDPA outside torchtitan's _save_list (B200, mid-2025; PR #1196 / #2095) is
    # PREFER_RECOMPUTE: the backward reruns the attention forward of each of the 32 layers.
    saved = dataclasses.replace(FLASH, selective_policy="op")
    redone = dataclasses.replace(saved, sac_saves_attention=False)
    kw: dict[str, object] = {"dp": 8, "micro_batch": 1, "recompute": "selective"}
    extra = step(llama(), redone, **kw)["recompute_s"] - step(llama(), saved, **kw)["recompute_s"]
    geo, lay = geometry(llama()), LayoutArrays.from_layouts([Layout(**kw)])  # type: ignore[arg-type]
    layer = _layer(geo, redone, lay, FABRIC, FACTORS, np.array([4096.0]))
    assert extra == pytest.approx(32 * float(layer.attn_fwd[0]), rel=1e-9)
    # HFU counts the attention forward FLOPs again: 4 s a d per token per layer.
    flops = [
        estimate_step(geo, w, lay, FABRIC, FACTORS).recompute_flops_per_token
        for w in (saved, redone)
    ]
    assert float(flops[1][0] - flops[0][0]) == pytest.approx(4 * 4096 * 32 * 128 * 32)


def test_a_pipeline_spanning_nodes_sends_at_network_speed() -> None:
    # tp=4 x pp=4 = 16 GPUs on 8-GPU nodes: one stage boundary sits on InfiniBand and the
    # lockstep 1F1B schedule waits for it, so every send runs at the network's pace.
    all_ib = Fabric(GPU, 8, IB, IB, 8)
    spans = step(tp=4, pp=4, micro_batch=1)
    assert spans["pp_p2p_s"] == pytest.approx(
        step(tp=4, pp=4, micro_batch=1, fabric=all_ib)["pp_p2p_s"]
    )
    inside = step(tp=2, pp=4, micro_batch=1)  # 8 GPUs: the whole pipeline in one node
    assert inside["pp_p2p_s"] < step(tp=2, pp=4, micro_batch=1, fabric=all_ib)["pp_p2p_s"] / 5


def test_distributed_optimizer_param_gather_is_not_hidden_by_this_backward() -> None:
    # The all-gather of updated params follows the optimizer step: over InfiniBand it outlasts
    # the next step's first forward and stays partly exposed even with overlap on.
    overlap = step(tp=8, dp=8, micro_batch=1, zero=1)
    serial = step(
        tp=8, dp=8, micro_batch=1, zero=1, work=dataclasses.replace(WORK, overlap_grad_reduce=False)
    )
    assert 0.0 < overlap["dp_comm_s"] < serial["dp_comm_s"]


def test_float8_gains_less_on_small_gemms_than_on_large_ones() -> None:
    """Scaling/casting traffic grows with the operands, the GEMM with their product (torchao
    float8 README: 0.80x of bf16 at 1024 x 2048 x 1024, 1.39x at 4096 x 8192 x 16384)."""
    h100 = dataclasses.replace(GPU, flops={"bf16": 989e12, "fp16": 989e12, "fp8": 1979e12})
    fabric = Fabric(h100, 8, NVSWITCH, IB, 8)

    def speedup(hidden: int) -> float:
        spec = gpt_spec(hidden, hidden // 128, 4, 51200, 2048, f"gpt-{hidden}")
        work = Workload(seq_len=2048, global_batch=8)
        fp8 = dataclasses.replace(work, precision="fp8")
        kw = {"tp": 1, "micro_batch": 4}
        return step(spec, work, fabric, **kw)["seconds"] / step(spec, fp8, fabric, **kw)["seconds"]

    small, large = speedup(1024), speedup(8192)
    assert small < large
    assert large < 2.0 * FACTORS.matmul_efficiency_fp8 / FACTORS.matmul_efficiency_bf16


def test_step_seconds_of_a_layout_do_not_depend_on_the_layouts_beside_it() -> None:
    """A plan alone sums one layout's parts; a batch or a search sums many at once. Summed
    across the stack, 13 parts were added pairwise for one layout and in sequence for more,
    so --queries and plan_training differed in the last digits (llama-3.2-1b, dgx-h100, pp 4,
    micro-batch 4, global batch 1024: 263660.5471142131 tokens/s alone, ...2132 in a batch)."""
    rng = np.random.default_rng(0)
    for _ in range(50):
        parts = {name: rng.random(4) * 10.0 ** rng.integers(-6, 3) for name in STEP_PARTS}
        many = StepArrays(
            parts=parts, microbatches=np.ones(4), recompute_flops_per_token=np.zeros(4)
        )
        for row in range(4):
            alone = {name: value[row : row + 1] for name, value in parts.items()}
            one = StepArrays(alone, np.ones(1), np.zeros(1))
            assert many.seconds[row] == one.seconds[0]
