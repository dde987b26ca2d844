"""How ``plan_inference`` lays the model on the devices: the defaults it picks (engine, weights
format, KV dtype) and the pipeline stages (each device's memory and host-RAM offload:
``rigwise.api.infer_memory``).

Shared by the planner (``rigwise.api.infer``), its disaggregated pools
(``rigwise.api.infer_disagg``) and the serving-layout search (``rigwise.api.serving_search``).
Model and hardware lookups are cached (``rigwise.api._lookup``) so sweeps run thousands of
plans per second.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

from rigwise.api._lookup import cached_cluster, cached_model
from rigwise.errors import InputError
from rigwise.estimate.engine_overheads import (
    EngineOverheads,
    device_class,
    engine_overheads,
    usable_memory_bytes,
)
from rigwise.estimate.inference_stages import Stage, group_count
from rigwise.estimate.serving_layout import ReplicaLayout, replica_stages
from rigwise.hardware import Accelerator, Cluster, Node
from rigwise.models import ModelSpec

if TYPE_CHECKING:
    from collections.abc import Callable

    from rigwise.api.infer_options import InferOptions
    from rigwise.estimate.engine_rules import Violation

GGUF_ENGINES = ("llama.cpp", "ollama")
DEFAULT_QUANT = {"llama.cpp": "Q4_K_M", "ollama": "Q4_K_M", "mlx": "Q4_0"}
_DEFAULT_KV = {"llama.cpp": "f16", "ollama": "f16", "mlx": "f16"}
_MAX_DEFAULT_TP = 8  # the largest NVLink tensor-parallel group engines' recipes use by default


def model_of(name: str) -> ModelSpec:
    return cached_model(name)


def cluster_of(on: str | None, nodes: int, network: str | None, path: str | None) -> Cluster:
    return cached_cluster(on, nodes, network, path, "rtx-4090")


def _classes(cluster: Cluster) -> set[str]:
    return {device_class(node.accelerator) for node, _ in cluster.runs}


def default_engine(cluster: Cluster, concurrency: int | str) -> str:
    """llama.cpp for consumer GPUs, Apple and CPUs at batch 1; vLLM for datacenter or serving."""
    classes = _classes(cluster)
    if any(c == "cpu" or c.startswith("apple") for c in classes):
        return "llama.cpp"
    if concurrency != 1 or any(c.endswith("-hbm") for c in classes):
        return "vllm"
    return "llama.cpp"


def check_engine(engine: str, cluster: Cluster) -> None:
    from rigwise.estimate.engine_rules import vendor_violation

    _refuse(
        vendor_violation(engine, [node.accelerator for node, _ in cluster.runs]),
        "Use --engine llama.cpp or vllm, or leave --engine out for the default.",
    )


def check_kv(engine: str, kv_dtype: str) -> None:
    """A --kv-quant the engine has no option for is bad input (engine_rules.csv kv_dtype)."""
    from rigwise.estimate.engine_rules import kv_violation

    gguf = engine in ("llama.cpp", "ollama")  # ggml types only: no fp8 KV cache
    _refuse(
        kv_violation(engine, kv_dtype),
        "Use --kv-quant q8_0 (or leave it out for the engine's default), or --engine vllm, "
        "which takes fp8."
        if gguf
        else "Use --kv-quant fp8 (or leave it out for the engine's default), or --engine "
        "llama.cpp, which takes q8_0 and q4_0.",
    )


def check_host_used(host: str | None, offload: str | None) -> None:
    """--host names the CPU whose RAM takes offloaded weights: beside --offload none it was
    ignored without a word. (Without --offload, an engine that offloads only when asked plans
    "does not fit" and its levers name --offload auto.)"""
    if host is not None and offload == "none":
        raise InputError(
            f"--host {host} names the CPU whose RAM takes offloaded weights, but --offload none "
            "offloads nothing.",
            hint="Use --offload auto, or drop --host.",
        )


def check_weights(engine: str, quant: str) -> None:
    """A --quant the engine cannot load is bad input (engine_rules.csv weight_formats)."""
    from rigwise.estimate.engine_rules import weights_violation

    _refuse(
        weights_violation(engine, quant),
        "A GGUF engine runs GGUF types: use --quant Q4_K_M (or Q8_0, F16), or --engine vllm "
        "for an AWQ, GPTQ, FP8 or INT8 checkpoint.",
    )


def _refuse(found: Violation | None, hint: str) -> None:
    """An engine rule broken by the options themselves, whatever the layout: bad input."""
    if found is not None:
        raise InputError(f"{found.message} (engine rule {found.rule})", hint=hint)


def default_quant(engine: str) -> str:
    return DEFAULT_QUANT.get(engine, "BF16")


def default_kv(engine: str, quant: str) -> str:
    """GGUF engines keep an f16 cache; NVIDIA's FP8/FP4 checkpoints (ModelOpt, as in the
    TensorRT-LLM perf overview) carry an FP8 KV cache (hf_quant_config.json
    kv_cache_quant_algo FP8); others keep bf16."""
    if engine in _DEFAULT_KV:
        return _DEFAULT_KV[engine]
    return "fp8" if engine == "tensorrt-llm" and quant in ("FP8", "NVFP4") else "bf16"


def file_quant(spec: ModelSpec) -> str | None:
    """A .gguf file is planned as it is: its own file type, so that ``spec.weights_bytes``
    returns the file's real per-tensor bytes (mixed Q4_K/Q6_K/F32 tensors, MXFP4 experts)
    rather than a default format's bits per weight. None for a file type rigwise has no
    format for (the engine default applies) and for every model that is not a GGUF file."""
    if spec.gguf_quant is None:
        return None
    from rigwise.models import quant_format

    try:
        return quant_format(spec.gguf_quant).name
    except InputError:
        return None


def canonical_quant(name: str) -> str:
    from rigwise.models import quant_format

    return quant_format(name).name


def _split(options: InferOptions, engine: str) -> str:
    return options.split or ("layer" if engine in (*GGUF_ENGINES, "mlx") else "tensor")


def _allowed_tp(engine: str, spec: ModelSpec, cluster: Cluster, quant: str) -> int | None:
    """The largest tp <= 8 dividing the node's devices that the engine's head rules allow,
    or None where a whole-node group is allowed (or nothing is)."""
    node = cluster.runs[0][0]
    if _tp_allowed(engine, spec, node, quant, node.count):
        return None
    for width in range(_MAX_DEFAULT_TP, 0, -1):
        if node.count % width == 0 and _tp_allowed(engine, spec, node, quant, width):
            return width
    return None


def default_layout(
    options: InferOptions, cluster: Cluster, engine: str, spec: ModelSpec, quant: str
) -> tuple[InferOptions, str | None]:
    """A node whose whole tensor-parallel group breaks the engine's head rules, with no
    --tp/--pp/--dp: a GB200 NVL72 (no model's heads divide 72) or 3, 5, 6 or 7 cards (vLLM
    refuses --tensor-parallel-size 3 for 32 heads). Take the largest tp <= 8 the rules allow
    that divides the node, the fewest pipeline stages whose weights fit, and the rest of the
    node as data-parallel replicas, with the note saying so: what a user of that engine runs
    (3x RTX 3090 and an 8B model: three replicas), not "does not fit" and a fourth card."""
    asked = (options.tp, options.pp, options.disagg, options.dp, options.ep, options.attention_dp)
    kinds = {(node.accelerator.id, node.count) for node, _ in cluster.runs}
    node = cluster.runs[0][0]
    if len(kinds) > 1 or node.count == 1 or _split(options, engine) != "tensor":
        return options, None
    if options.tp is None and options.disagg is None and options.dp > 1:
        return _replica_tp(options, cluster, lambda tp: _tp_allowed(engine, spec, node, quant, tp))
    if asked != (None, None, None, 1, 1, 1):
        return options, None
    width = _allowed_tp(engine, spec, cluster, quant)
    if width is None:
        return options, None
    groups = cluster.accelerator_count // width
    room = usable_memory_bytes(node.accelerator, overheads(engine, node.accelerator))
    margin = overheads(engine, node.accelerator).tight_margin
    need = max(1, math.ceil(spec.weights_bytes(quant) / (width * room * (1 - margin))))
    # as many replicas as fit, each as deep as the groups allow: 3 cards and a 70B model that
    # needs 2 stages run pp 3 (what vLLM users run), not pp 2 beside an idle card
    dp = max(1, groups // need)
    pp = min(groups, groups // dp) if need <= groups else groups
    replicas = f"{dp} data-parallel replica{'s' if dp > 1 else ''}"
    note = (
        f"No tensor-parallel group of a whole {node.count}-device node suits {spec.name} "
        f"({spec.num_attention_heads} heads, engine rule); planned as tp {width} x pp {pp} "
        f"with {replicas}. Give --tp/--pp/--dp to choose."
    )
    return replace(options, tp=width, pp=pp if pp > 1 else None, dp=dp), note


def _tp_allowed(engine: str, spec: ModelSpec, node: Node, quant: str, tp: int) -> bool:
    from rigwise.estimate.engine_rules import violation

    return violation(engine, spec, [node.accelerator], quant, [tp]) is None


def _replica_tp(
    options: InferOptions, cluster: Cluster, allowed: Callable[[int], bool]
) -> tuple[InferOptions, str | None]:
    """--dp N alone (or with --pp, --ep) on a node of more than N devices: each replica on its
    share of the node (8x H100 and --dp 2: tp 4), not the whole node per replica ("needs 16
    devices"). The share is the largest that divides a node, that the engine's head rules
    allow and that --ep and --attention-dp divide; what is left idles and the note says so
    (--dp 3 on 8: tp 2, 2 devices idle, as ``vllm serve --data-parallel-size 3
    --tensor-parallel-size 2`` leaves them)."""
    node = cluster.runs[0][0]
    pp = options.pp or 1
    share = cluster.accelerator_count // (options.dp * pp)
    if share >= node.count:
        return options, None  # whole nodes per replica
    if share < 1:  # more replicas than devices: refused as "need N devices", one a replica
        return replace(options, tp=1), None
    fits = [
        tp
        for tp in range(share, 0, -1)
        if node.count % tp == 0
        and tp % options.ep == 0
        and tp % options.attention_dp == 0
        and allowed(tp)
    ]
    if not fits:
        return options, None
    tp = fits[0]
    pp = options.pp or max(1, group_count(cluster, "tensor", tp) // options.dp)  # as the stages
    used = tp * pp * options.dp
    note = f"--dp {options.dp}: each replica on tp {tp}"
    note += f" x pp {pp}" if pp > 1 else ""
    note += f", {tp * pp} of the node's {node.count} devices"
    idle = cluster.accelerator_count - used
    note += f" ({idle} of the {cluster.accelerator_count} idle)" if idle else ""
    return replace(options, tp=tp), note + ". Give --tp to choose."


def stages_of(
    options: InferOptions, cluster: Cluster, engine: str, num_layers: int
) -> tuple[Stage, ...]:
    return replica_stages(
        cluster,
        _split(options, engine),
        ReplicaLayout(options.tp, options.pp, options.dp, options.ep, options.attention_dp),
        lambda acc: engine_overheads(engine, device_class(acc)),
        max_stages=num_layers,
    )


def overheads(engine: str, accelerator: Accelerator) -> EngineOverheads:
    return engine_overheads(engine, device_class(accelerator))
