"""Admission policy: does a machine, as measured, meet the grid's minimum requirements?

Pure: ``MachineFacts`` (what the agent probed and benchmarked) + ``Policy`` (the grid's file) ->
``Admission`` listing every requirement with its measured value, and every one that failed.
The grid trusts measured numbers (the verification benchmark), never claimed specs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from rigwise.catalog.loader import read_yaml
from rigwise.errors import InputError, validation_message
from rigwise.file_model import FileModel
from rigwise.serialize import JsonObject
from rigwise.units import format_bytes
from rigwise.validate_input import load_yaml, read_user_text

DEFAULT_POLICY_FILE = "grid_policy_default.yaml"
MAX_FACT_BYTES = 1e18  # an exabyte: above any one machine's memory or disk


@dataclass(frozen=True)
class GpuFacts:
    name: str
    memory_bytes: float
    catalog_id: str | None = None
    nvlink_domain: str | None = None


@dataclass(frozen=True)
class MachineFacts:
    """A machine as the agent found it: probed inventory plus verified (benchmarked) speed."""

    hostname: str
    cpu_cores: int
    memory_bytes: float
    gpus: tuple[GpuFacts, ...]
    disk_free_bytes: float
    network_bytes_per_s: float
    measured_flops: float  # verification matmul, best dtype, whole machine
    measured_memory_bandwidth_bytes_per_s: float
    numa_nodes: int = 1
    site: str = "default"
    switch: str = "default"
    disk_path: str = "."  # where disk_free_bytes was measured (the grid measures it there too)
    storage_path: str = ""  # the node's dataset directory when it takes the storage role

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MachineFacts:
        gpus = tuple(GpuFacts(**gpu) for gpu in data.get("gpus", ()))
        return cls(**{**data, "gpus": gpus})


class _GpuFactsModel(FileModel):
    name: str = Field(max_length=200)
    memory_bytes: float = Field(ge=0, le=MAX_FACT_BYTES, allow_inf_nan=False)
    catalog_id: str | None = Field(default=None, max_length=200)
    nvlink_domain: str | None = Field(default=None, max_length=200)


class FactsModel(FileModel):
    """A machine's facts as a joining agent sends them (``POST /api/join``): every key known,
    numbers finite, non-negative and within bounds, a bool no count, text of bounded length
    (a hostname is at most 253 characters, RFC 1035 Sec. 2.3.4 with dots). What a probe may
    fail to find (an empty hostname, 0 cores) is left to the policy to reject, as a result."""

    hostname: str = Field(max_length=253)
    cpu_cores: int = Field(ge=0, le=1_000_000)
    memory_bytes: float = Field(ge=0, le=MAX_FACT_BYTES, allow_inf_nan=False)
    gpus: list[_GpuFactsModel] = Field(default_factory=list, max_length=1024)
    disk_free_bytes: float = Field(ge=0, le=MAX_FACT_BYTES, allow_inf_nan=False)
    network_bytes_per_s: float = Field(ge=0, le=1e15, allow_inf_nan=False)
    measured_flops: float = Field(ge=0, le=1e21, allow_inf_nan=False)
    measured_memory_bandwidth_bytes_per_s: float = Field(ge=0, le=1e15, allow_inf_nan=False)
    numa_nodes: int = Field(default=1, ge=0, le=1024)
    site: str = Field(default="default", min_length=1, max_length=200)
    switch: str = Field(default="default", min_length=1, max_length=200)
    disk_path: str = Field(default=".", min_length=1, max_length=4096)
    storage_path: str = Field(default="", max_length=4096)


def facts_from_request(data: object) -> MachineFacts:
    """The facts a joining agent sent, validated (``FactsModel``): InputError naming the bad
    key, value and rule (HTTP 400) instead of an internal error or a stored 100 kB hostname."""
    try:
        checked = FactsModel.model_validate(data)
    except ValidationError as exc:
        raise InputError(
            validation_message(exc, "facts"),
            hint="Join with `rigwise grid join`, which sends the facts it probed and measured.",
        ) from None
    return MachineFacts.from_dict(checked.model_dump())


class PolicyModel(FileModel):
    """The policy file (YAML) as read at the edge (``min_gpus: true`` is no number)."""

    min_gpus: int = Field(default=0, ge=0)
    min_gpu_memory_bytes: float = Field(default=0, ge=0)
    min_measured_flops: float = Field(default=0, ge=0)
    min_memory_bandwidth_bytes_per_s: float = Field(default=0, ge=0)
    min_disk_free_bytes: float = Field(default=0, ge=0)
    min_network_bytes_per_s: float = Field(default=0, ge=0)
    min_cpu_cores: int = Field(default=1, ge=0)
    min_memory_bytes: float = Field(default=0, ge=0)
    source: str = ""


@dataclass(frozen=True)
class Policy(JsonObject):
    min_gpus: int
    min_gpu_memory_bytes: float
    min_measured_flops: float
    min_memory_bandwidth_bytes_per_s: float
    min_disk_free_bytes: float
    min_network_bytes_per_s: float
    min_cpu_cores: int
    min_memory_bytes: float


@dataclass(frozen=True)
class Check:
    requirement: str
    required: float
    measured: float
    passed: bool
    message: str


@dataclass(frozen=True)
class Admission:
    admitted: bool
    checks: tuple[Check, ...] = field(default_factory=tuple)

    @property
    def reasons(self) -> list[str]:
        return [check.message for check in self.checks if not check.passed]

    def to_dict(self) -> dict[str, Any]:
        return {
            "admitted": self.admitted,
            "reasons": self.reasons,
            "checks": [asdict(check) for check in self.checks],
        }


def policy_from_mapping(data: dict[str, Any], where: str) -> Policy:
    try:
        model = PolicyModel.model_validate(data.get("admission", data))
    except ValidationError as exc:
        message = validation_message(exc, f"Policy {where} is invalid")
        raise InputError(message, hint="See docs/grid.md.") from None
    fields = model.model_dump(exclude={"source"})
    return Policy(**fields)


def load_policy(path: Path | None = None) -> Policy:
    """The policy in ``path``, or the packaged default."""
    if path is None:
        return policy_from_mapping(read_yaml(DEFAULT_POLICY_FILE), DEFAULT_POLICY_FILE)
    if not path.exists():
        raise InputError(f"Policy file {str(path)!r} does not exist.", hint="Check the path.")
    text = read_user_text(path, "policy file")
    data = load_yaml(text, f"Policy file {str(path)!r}") or {}  # bounded: no aliases
    if not isinstance(data, dict):
        raise InputError(f"Policy file {str(path)!r} is not a mapping.", hint="See docs/grid.md.")
    return policy_from_mapping(data, str(path))


def _check(name: str, required: float, measured: float, shown: str) -> Check:
    passed = measured >= required
    verdict = "ok" if passed else "below the minimum"
    return Check(name, float(required), float(measured), passed, f"{name}: {shown} ({verdict})")


def _bytes(required: float, measured: float) -> str:
    return f"measured {format_bytes(measured)}, required {format_bytes(required)}"


def _rate(required: float, measured: float, unit: str, scale: float) -> str:
    return f"measured {measured / scale:.3g} {unit}, required {required / scale:.3g} {unit}"


def evaluate(policy: Policy, facts: MachineFacts) -> Admission:
    """Every requirement checked; a machine is admitted only if all pass."""
    largest_gpu = max((gpu.memory_bytes for gpu in facts.gpus), default=0.0)
    checks = (
        _check(
            "gpus",
            policy.min_gpus,
            len(facts.gpus),
            f"measured {len(facts.gpus)}, required {policy.min_gpus}",
        ),
        _check(
            "gpu_memory",
            policy.min_gpu_memory_bytes,
            largest_gpu,
            _bytes(policy.min_gpu_memory_bytes, largest_gpu),
        ),
        _check(
            "measured_flops",
            policy.min_measured_flops,
            facts.measured_flops,
            _rate(policy.min_measured_flops, facts.measured_flops, "TFLOP/s", 1e12),
        ),
        _check(
            "memory_bandwidth",
            policy.min_memory_bandwidth_bytes_per_s,
            facts.measured_memory_bandwidth_bytes_per_s,
            _rate(
                policy.min_memory_bandwidth_bytes_per_s,
                facts.measured_memory_bandwidth_bytes_per_s,
                "GB/s",
                1e9,
            ),
        ),
        _check(
            "disk_free",
            policy.min_disk_free_bytes,
            facts.disk_free_bytes,
            _bytes(policy.min_disk_free_bytes, facts.disk_free_bytes),
        ),
        _check(
            "network",
            policy.min_network_bytes_per_s,
            facts.network_bytes_per_s,
            _rate(policy.min_network_bytes_per_s, facts.network_bytes_per_s, "Gbit/s", 1e9 / 8),
        ),
        _check(
            "cpu_cores",
            policy.min_cpu_cores,
            facts.cpu_cores,
            f"measured {facts.cpu_cores}, required {policy.min_cpu_cores}",
        ),
        _check(
            "memory",
            policy.min_memory_bytes,
            facts.memory_bytes,
            _bytes(policy.min_memory_bytes, facts.memory_bytes),
        ),
    )
    return Admission(all(check.passed for check in checks), checks)
