"""What PyTorch FSDP holds per GPU where it differs from the ZeRO-3 of the ZeRO paper (numpy).

ZeRO-3 (Rajbhandari et al. 2020, Sec. 3.1 and 5) keeps a 2-byte partition of the working
weights beside the optimizer's fp32 master partition. PyTorch FSDP under a mixed-precision
policy has no such copy: the shard stays in the parameter's own dtype (fp32) and the optimizer
steps it in place; ``param_dtype`` is only the dtype of the unsharded parameter gathered for
compute (PyTorch ``MixedPrecisionPolicy``, torch/distributed/fsdp/_fully_shard/_fsdp_api.py:
"FSDP works well with module-level mixed precision since it keeps the high-precision sharded
parameters in memory anyway ... does not require any extra memory to keep a high-precision
copy of the parameters for the optimizer step"; "The optimizer step uses the sharded parameter
in the original dtype"). torchtitan shards this way (``apply_fsdp``: ``MixedPrecisionPolicy(
param_dtype=bfloat16, reduce_dtype=float32)`` over an fp32 model).

Its sharded gradients are new tensors every step: the loop's ``optimizer.zero_grad()`` sets
them to None (``set_to_none=True``, torch.optim's default since PyTorch 2.0; torchtitan
``train_step`` calls it before the forward), and FSDP's post-backward reduce-scatter writes
each unit's gradient shard as the backward reaches it. At the activation peak, as the backward
starts, none exists; each block's shard appears as that block's stored activations are freed.
"""

from __future__ import annotations

import numpy as np

from rigwise.estimate.training_layout import LayoutArrays, Workload

MASTER_BYTES = 4.0  # the fp32 shard: the parameter FSDP keeps and the optimizer steps


def master_shard_bytes(work: Workload, lay: LayoutArrays, shard_params: np.ndarray) -> np.ndarray:
    """Bytes of the fp32 shards FSDP keeps as the parameters (and master weights) per GPU:
    ``shard_params`` parameters each, where ZeRO-3 is PyTorch FSDP over a mixed-precision run
    that trains the base (pure bf16 has no master copy; adapters are handled apart)."""
    applies = work.torch_fsdp and work.trains_base and not work.pure_bf16
    master: np.ndarray = np.where((lay.zero >= 3) & applies, shard_params * MASTER_BYTES, 0.0)
    return master


def grads_absent_at_peak(
    work: Workload, lay: LayoutArrays, shard_grads: np.ndarray, activations: np.ndarray
) -> np.ndarray:
    """Gradient-shard bytes not yet alive at the peak under PyTorch FSDP without pipelining.

    The backward trades each block's stored activations for its gradient shard, so the state
    plus what is alive peaks at max(activations, gradients): the gradients count only by what
    they exceed the activations. With pipelining the stage's gradients accumulate over the
    microbatches in flight (kept whole), and an offloaded or in-backward optimizer never keeps
    them, so nothing changes there.
    """
    applies = work.torch_fsdp and work.trains_base and work.offload == "none"
    applies = applies and not work.optimizer_in_backward
    live = (lay.zero >= 3) & (lay.pp == 1) & applies
    absent: np.ndarray = np.where(live, np.minimum(shard_grads, activations), 0.0)
    return absent
