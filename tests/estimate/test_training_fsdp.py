"""PyTorch FSDP's memory against the ZeRO-3 of the ZeRO paper: the fp32 shard is the master
copy, and gradient shards are made during the backward (estimate/training_fsdp.py)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from tests.estimate.test_training_memory import llama

from rigwise.estimate.compute import training_factors
from rigwise.estimate.training_fsdp import grads_absent_at_peak, master_shard_bytes
from rigwise.estimate.training_layout import Layout, LayoutArrays, Workload, geometry
from rigwise.estimate.training_memory import memory_per_gpu, stage_params, state_memory

GEO = geometry(llama())
ZERO3 = Workload(seq_len=8192, global_batch=8, selective_policy="op")
FSDP = dataclasses.replace(ZERO3, torch_fsdp=True)


def lay(**kw: object) -> LayoutArrays:
    base: dict[str, object] = {"dp": 8, "zero": 3, "micro_batch": 1, "global_batch": 8}
    return LayoutArrays.from_layouts([Layout(**(base | kw))])


def test_the_fp32_shard_is_the_master_copy_so_no_two_byte_shard_sits_beside_it() -> None:
    # ZeRO-3 (Rajbhandari et al. 2020): a 2-byte weight shard + 12 bytes of optimizer state
    # (fp32 master + Adam moments) per parameter over 8 GPUs; PyTorch FSDP keeps the 4-byte
    # fp32 shard and the 8 bytes of moments: 2 bytes x P / 8 less, the moments unchanged.
    params = float(stage_params(GEO, lay())[0])
    zero3 = [float(x[0]) for x in state_memory(GEO, ZERO3, lay())]
    fsdp = [float(x[0]) for x in state_memory(GEO, FSDP, lay())]
    assert zero3[0] + zero3[2] - fsdp[0] - fsdp[2] == pytest.approx(params * 2 / 8)
    assert fsdp[2] == pytest.approx(params * 8 / 8)
    assert fsdp[0] - zero3[0] == pytest.approx(params * (4 - 2) / 8)


def test_where_fsdp_has_no_master_nothing_moves() -> None:
    # Pure bf16 keeps no fp32 copy; with pipelining the stage's bf16 parameters stay whole
    # beside the shards, so only the label of the fp32 shard moves (optimizer -> weights).
    pure = dataclasses.replace(FSDP, pure_bf16=True)
    assert master_shard_bytes(pure, lay(), np.array([1e9]))[0] == 0.0
    piped = lay(pp=2, global_batch=64)
    zero3, fsdp = state_memory(GEO, ZERO3, piped), state_memory(GEO, FSDP, piped)
    assert float(sum(x[0] for x in fsdp)) == pytest.approx(float(sum(x[0] for x in zero3)))
    assert master_shard_bytes(FSDP, lay(zero=2), np.array([1e9]))[0] == 0.0


def test_gradient_shards_are_made_as_the_backward_frees_activations() -> None:
    # zero_grad() sets gradients to None before the forward; each block's fp32 shard comes
    # with the backward that frees its activations, so at the peak (8192 tokens of Llama 3.1
    # 8B stored: ~16 GiB) none of the P x 4 / 8 bytes of shards is alive yet.
    factors = training_factors("h100-sxm")
    params = float(stage_params(GEO, lay())[0])
    zero3 = memory_per_gpu(GEO, ZERO3, lay(), factors)
    fsdp = memory_per_gpu(GEO, FSDP, lay(), factors)
    assert float(zero3.gradients[0] - fsdp.gradients[0]) == pytest.approx(params * 4 / 8)
    assert float(zero3.activations[0]) == float(fsdp.activations[0])


def test_gradients_count_only_by_what_they_exceed_the_activations() -> None:
    # peak = state + max(activations, gradients): with 5 GB of gradient shards and 2 GB of
    # activations the gradients raise it by 3 GB; pipelining or an offloaded optimizer keep
    # them as before.
    grads, acts = np.array([5e9]), np.array([2e9])
    assert grads_absent_at_peak(FSDP, lay(), grads, acts)[0] == pytest.approx(2e9)
    assert grads_absent_at_peak(FSDP, lay(), grads, np.array([9e9]))[0] == pytest.approx(5e9)
    assert grads_absent_at_peak(FSDP, lay(pp=2, global_batch=64), grads, acts)[0] == 0.0
    offload = dataclasses.replace(FSDP, offload="optimizer")
    assert grads_absent_at_peak(offload, lay(), grads, acts)[0] == 0.0
    assert grads_absent_at_peak(ZERO3, lay(), grads, acts)[0] == 0.0
