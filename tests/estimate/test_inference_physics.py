"""The inference physics on hand-made devices and a hand-made model (no catalog hardware).

Efficiencies are pinned through the calibration hook so every expected number below is worked
out from the formula in the docstring of the function under test.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from rigwise.errors import InputError
from rigwise.estimate import comms
from rigwise.estimate.collective_latency import collective_link
from rigwise.estimate.engine_overheads import device_class, engine_overheads, usable_memory_bytes
from rigwise.estimate.inference import (
    Context,
    decode_phase,
    decode_stage_parts,
    pipeline_factor,
    prefill_phase,
    read_weight_bytes,
    weight_reads,
)
from rigwise.estimate.inference_efficiency import efficiency
from rigwise.estimate.inference_memory import (
    DOES_NOT_FIT,
    FITS,
    TIGHT,
    offload_fraction,
    stage_memory,
    summarize,
)
from rigwise.estimate.inference_stages import Stage
from rigwise.hardware import Accelerator, Link
from rigwise.models import ModelSpec, MoESpec

GB = 1e9
PCIE = Link(
    id="pcie4-x16", name="PCIe 4.0 x16", kind="pcie", bandwidth_bytes_per_s=31.5e9, latency_s=2e-6
)
CAL = {
    "decode_bandwidth_efficiency": 0.8,
    "decode_kv_bandwidth_efficiency": 0.5,
    "decode_compute_efficiency": 0.5,
    "prefill_compute_efficiency": 0.5,
    "prefill_attention_efficiency": 0.25,
    "serving_compute_efficiency": 0.5,
}


def gpu(
    bandwidth_gb_s: float = 1000.0, memory_bytes: float = 24.5e9, tflops: float = 100.0
) -> Accelerator:
    return Accelerator(
        id="test-gpu", name="Test GPU", vendor="nvidia", kind="gpu", memory_bytes=memory_bytes,
        memory_type="GDDR6X", memory_bandwidth_bytes_per_s=bandwidth_gb_s * GB,
        flops={"fp16": tflops * 1e12, "bf16": tflops * 1e12}, vector_fp32_flops=tflops * 1e12 / 4,
        tdp_watts=350.0,
    )  # fmt: skip


def dense_model(**changes: object) -> ModelSpec:
    spec = ModelSpec(
        name="test-8b", architecture="llama", num_layers=32, hidden_size=4096,
        intermediate_size=14336, num_attention_heads=32, num_kv_heads=8, head_dim=128,
        vocab_size=128256, tie_word_embeddings=False, max_context=131072,
        params_total=8_030_261_248, params_active=8_030_261_248, params_embedding=525_336_576,
        params_lm_head=525_336_576, params_vectors=266_240,
    )  # fmt: skip
    return replace(spec, **changes)  # type: ignore[arg-type]


def stage(
    acc: Accelerator, fraction: float = 1.0, tp: int = 1, index: int = 0, **kw: object
) -> Stage:
    return Stage(
        index=index, node_index=0, accelerator=acc, tp=tp, layer_fraction=fraction,
        intra_link=PCIE if tp > 1 or kw.get("link") else None,
        host_memory_bytes=kw.get("host"), host_bandwidth_bytes_per_s=kw.get("host_bw"),  # type: ignore[arg-type]
    )  # fmt: skip


def context(spec: ModelSpec, quant: str = "F16", engine: str = "llama.cpp") -> Context:
    return Context(
        spec=spec, engine=engine, quant=quant, kv_dtype="f16",
        weights_bytes=spec.weights_bytes(quant),
        overheads=engine_overheads(engine, "nvidia-gddr"),
        offload_efficiency=None, calibration=CAL,
    )  # fmt: skip


def test_decode_memory_part_is_weights_over_reached_bandwidth() -> None:
    spec, acc = dense_model(), gpu()
    ctx = context(spec)
    parts = decode_stage_parts(ctx, stage(acc), context=1, batch=1)
    kv = spec.kv_cache_bytes(1, "f16") / (acc.memory_bandwidth_bytes_per_s * 0.5)
    expected = ctx.weights_bytes / (acc.memory_bandwidth_bytes_per_s * 0.8) + kv
    assert parts["memory_bandwidth"] == pytest.approx(expected)


def test_decode_is_memory_bound_and_scales_with_bandwidth() -> None:
    spec = dense_model()
    slow = decode_phase(context(spec), (stage(gpu(500.0)),), None, 100)
    fast = decode_phase(context(spec), (stage(gpu(1000.0)),), None, 100)
    assert slow.bound == fast.bound == "memory bandwidth"
    assert 1.6 < fast.tokens_per_s / slow.tokens_per_s <= 2.0  # fixed overheads do not scale


def test_longer_context_decodes_slower_because_the_kv_cache_is_read() -> None:
    ctx = context(dense_model())
    short = decode_phase(ctx, (stage(gpu()),), None, 100)
    long = decode_phase(ctx, (stage(gpu()),), None, 32_000)
    assert long.tokens_per_s < short.tokens_per_s
    assert long.parts["memory_bandwidth"] > short.parts["memory_bandwidth"]


def test_layer_split_adds_stage_times_and_hop_costs() -> None:
    ctx = context(dense_model())
    one = decode_phase(ctx, (stage(gpu()),), None, 100)
    halves = (stage(gpu(), 0.5, link=True), stage(gpu(), 0.5, index=1, link=True))
    two = decode_phase(ctx, halves, None, 100)
    hop = ctx.overheads.layer_hop_overhead_s + comms.p2p(4096 * 2, PCIE).seconds
    assert two.seconds == pytest.approx(one.seconds + hop)


def test_tensor_parallel_pays_two_all_reduces_per_layer() -> None:
    ctx = context(dense_model())
    parts = decode_stage_parts(ctx, stage(gpu(), tp=2), context=100, batch=1)
    # a PCIe ring step of a small NCCL collective costs its step latency (collective_latency.csv)
    per_layer = 2 * comms.ring_all_reduce(4096 * 2, 2, collective_link(PCIE, 2)).seconds
    assert per_layer > 2 * comms.ring_all_reduce(4096 * 2, 2, PCIE).seconds
    assert parts["tensor_parallel_comm"] == pytest.approx(32 * per_layer)
    single = decode_stage_parts(ctx, stage(gpu()), context=100, batch=1)
    assert parts["memory_bandwidth"] < single["memory_bandwidth"] * 0.6


def test_eight_way_tensor_parallel_pays_the_two_socket_ring_of_eight_pcie_gpus() -> None:
    # an 8-GPU PCIe node is two CPU sockets (collective_latency.csv, min_devices 5): 14 ring
    # steps of its stock-NCCL step latency per all-reduce, e.g. 48.16 us for 32 KB on 8x RTX PRO
    # 6000 (rtx6kpro nccl-tuning.md, default NCCL); batch 1 of a 4096-wide bf16 model all-reduces
    # 8 KB
    ctx = context(dense_model())
    parts = decode_stage_parts(ctx, stage(gpu(), tp=8), context=100, batch=1)
    ring = comms.ring_all_reduce(4096 * 2, 8, collective_link(PCIE, 8)).seconds
    assert parts["tensor_parallel_comm"] == pytest.approx(32 * 2 * ring)
    assert 45e-6 < ring < 57e-6  # the stock 8-GPU rows: 45-57 us for 8 B-32 KB
    four = decode_stage_parts(ctx, stage(gpu(), tp=4), context=100, batch=1)
    assert four["tensor_parallel_comm"] < parts["tensor_parallel_comm"] * 6 / 14


def test_prefill_is_compute_bound_at_the_dtype_peak() -> None:
    spec, acc = dense_model(), gpu(tflops=100.0)
    phase = prefill_phase(context(spec), (stage(acc),), None, 512)
    parts = spec.flops_per_token_parts(256)
    expected = 512 * (parts["matmul"] / (100e12 * 0.5) + parts["attention"] / (100e12 * 0.25))
    assert phase.bound == "compute"
    assert phase.seconds == pytest.approx(expected, rel=1e-6)


def test_pipeline_factor_is_one_without_pipelining_and_shrinks_with_micro_batches() -> None:
    overheads = engine_overheads("llama.cpp", "nvidia-gddr")
    assert pipeline_factor([1.0], 4096, overheads) == 1.0
    chunks = 4096 // overheads.workspace_tokens
    groups = 4096 // overheads.prefill_pipeline_tokens
    expected = (groups * 2.0 + (chunks - groups) * 1.0) / (chunks * 2.0)
    assert pipeline_factor([1.0, 1.0], 4096, overheads) == pytest.approx(expected)
    assert pipeline_factor([1.0, 1.0], 512, overheads) == pytest.approx(1.0)


def test_moe_batch_one_reads_only_the_routed_experts() -> None:
    moe = MoESpec(
        num_experts=8, experts_per_token=2, expert_intermediate_size=14336, num_moe_layers=32
    )
    spec = dense_model(moe=moe, params_total=46_702_792_704, params_active=12_879_921_152)
    ctx = context(spec, "Q4_K_M")
    dense, experts = read_weight_bytes(ctx, 1)
    _, all_touched = read_weight_bytes(ctx, 10_000)
    assert experts == pytest.approx(all_touched * 2 / 8)
    assert dense + all_touched == pytest.approx(ctx.weights_bytes)


def test_memory_verdicts_fit_tight_and_do_not_fit() -> None:
    spec = dense_model()
    overheads = engine_overheads("llama.cpp", "nvidia-gddr")
    weights = spec.weights_bytes("F16")
    verdicts = []
    for capacity in (40e9, weights + 0.9e9, 10e9):
        device = stage_memory(
            spec, stage(gpu(memory_bytes=capacity + 0.01)), weights, 0.0, overheads
        )
        verdicts.append(device.verdict)
    assert verdicts == [FITS, TIGHT, DOES_NOT_FIT]


def test_summary_names_the_device_that_does_not_fit() -> None:
    spec = dense_model()
    overheads = engine_overheads("llama.cpp", "nvidia-gddr")
    small = stage(gpu(memory_bytes=8.3e9))
    memory = summarize(
        [stage_memory(spec, small, spec.weights_bytes("F16"), 0.0, overheads)], [small]
    )
    assert memory.verdict == DOES_NOT_FIT
    assert "test-gpu" in memory.reason


def test_offload_moves_just_enough_weights_to_host_ram() -> None:
    spec = dense_model()
    overheads = engine_overheads("llama.cpp", "nvidia-gddr")
    weights = spec.weights_bytes("F16")
    base = stage(gpu(memory_bytes=8.3e9), host=64e9, host_bw=50e9)
    share = offload_fraction(spec, base, weights, 0.0, overheads)
    moved = replace(base, offloaded_fraction=share)
    assert 0.3 < share < 1.0
    assert stage_memory(spec, moved, weights, 0.0, overheads).verdict in (FITS, TIGHT)
    ctx = replace(context(spec), offload_efficiency=None)
    assert decode_stage_parts(ctx, moved, 100, 1)["host_offload"] > 0


def test_apple_keeps_its_wired_limit() -> None:
    mac = replace(
        gpu(memory_bytes=128 * 2**30), vendor="apple", kind="unified", memory_type="LPDDR5"
    )
    assert device_class(mac) == "apple-lpddr"
    usable = usable_memory_bytes(mac, engine_overheads("llama.cpp", "apple-lpddr"))
    assert 0.6 * 128 * 2**30 < usable < 0.9 * 128 * 2**30


def test_calibration_overrides_catalog_factors_and_rejects_unknown_keys() -> None:
    found = efficiency("llama.cpp", stage(gpu()), "F16", {"decode_bandwidth_efficiency": 0.33})
    assert found.decode_bandwidth_efficiency == 0.33
    with pytest.raises(InputError, match="decode_bw"):
        efficiency("llama.cpp", stage(gpu()), "F16", {"decode_bw": 0.5})
    with pytest.raises(InputError, match="fraction"):
        efficiency("llama.cpp", stage(gpu()), "F16", {"decode_bandwidth_efficiency": 7.0})


def test_offloaded_moe_weights_are_experts_first_so_host_reads_only_routed_ones() -> None:
    moe = MoESpec(
        num_experts=8, experts_per_token=2, expert_intermediate_size=14336, num_moe_layers=32
    )
    spec = dense_model(moe=moe, params_total=46_702_792_704, params_active=12_879_921_152)
    ctx = context(spec, "Q4_K_M")
    moved = replace(stage(gpu(), host=128e9, host_bw=50e9), offloaded_fraction=0.5)
    reads = weight_reads(ctx, moved, batch=1)
    offloaded = ctx.weights_bytes * 0.5  # less than the expert bytes: experts only
    assert reads.host == pytest.approx(offloaded * 2 / 8)
    dense, experts_touched = read_weight_bytes(ctx, 1)
    assert reads.device_dense == pytest.approx(dense)
    assert reads.device_experts + reads.host == pytest.approx(experts_touched)
