"""rigwise: plan, build, measure and pool hardware for AI models.

The public API is re-exported here; ``__all__`` lists exactly the public names. Everything but
the errors is imported on first use (PEP 562), so ``import rigwise`` and the CLI stay fast.
The machine probe is ``rigwise.probe.probe()`` (``rigwise.probe`` is its subpackage).

    >>> import rigwise
    >>> plan = rigwise.plan_inference(model="llama-3.1-70b", on="2x rtx-3090", quant="Q4_K_M")
    >>> plan.verdict, round(plan.decode.tokens_per_s)

The planners take one typed options object (``InferOptions``, ``TrainOptions``; every field
documented there) or its fields as keywords, and return frozen plans (``rigwise.plans``);
``rigwise.serialize.to_jsonable`` turns any result into the documented JSON.
"""

import importlib
from typing import Any as _Any

from rigwise import dataclass_code as _dataclass_code
from rigwise.errors import (
    CatalogError,
    GridError,
    InputError,
    ModelFormatError,
    ProbeError,
    RigwiseError,
    UnknownNameError,
)

__version__ = "0.1.0"

# Before any of rigwise's dataclasses is made: their generated methods' code is kept on disk.
_dataclass_code.install()

# public name -> module it lives in
_LAZY = {
    "Accelerator": "rigwise.hardware",
    "Cluster": "rigwise.hardware",
    "Link": "rigwise.hardware",
    "Node": "rigwise.hardware",
    "accelerators": "rigwise.hardware",
    "get_accelerator": "rigwise.hardware",
    "parse_node": "rigwise.hardware",
    "load_cluster_file": "rigwise.hardware",
    "ModelSpec": "rigwise.models",
    "load_model": "rigwise.models",
    "catalog_models": "rigwise.models",
    "list_gpus": "rigwise.api.gpus",
    "InferOptions": "rigwise.api.infer",
    "InferencePlan": "rigwise.plans",
    "plan_inference": "rigwise.api.infer",
    "TrainOptions": "rigwise.api.train",
    "TrainingPlan": "rigwise.plans",
    "plan_training": "rigwise.api.train",
    "Design": "rigwise.design.designer",
    "design_builds": "rigwise.design.api",
    "ProbeReport": "rigwise.probe.report",
    "BenchReport": "rigwise.bench.result",
    "run_bench": "rigwise.bench.runner",
    "load_calibration": "rigwise.bench.calibration",
}

__all__ = [
    "Accelerator",
    "BenchReport",
    "CatalogError",
    "Cluster",
    "Design",
    "GridError",
    "InferOptions",
    "InferencePlan",
    "InputError",
    "Link",
    "ModelFormatError",
    "ModelSpec",
    "Node",
    "ProbeError",
    "ProbeReport",
    "RigwiseError",
    "TrainOptions",
    "TrainingPlan",
    "UnknownNameError",
    "__version__",
    "accelerators",
    "catalog_models",
    "design_builds",
    "get_accelerator",
    "list_gpus",
    "load_calibration",
    "load_cluster_file",
    "load_model",
    "parse_node",
    "plan_inference",
    "plan_training",
    "run_bench",
]


def __getattr__(name: str) -> _Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rigwise' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
