"""Job templates, following the four steps of seed 002: hardware profile -> software
environment -> app config -> reusable template.

```yaml
name: tiny-lm
kind: train                 # train | evaluate | serve | command
hardware: {nodes: 1, cpus_per_node: 1, gpus_per_node: 0, labels: {site: lab}}  # train, nodes>1: DDP
software: {env: {OMP_NUM_THREADS: "1"}, requires: [torch]}
app: {dataset: shakespeare, steps: 300, register_as: tiny-lm}
template: {save_as: tiny-lm}      # or {uses: tiny-lm} to start from a saved template
```
Parsing is pydantic (the edge); inside, a frozen ``JobSpec``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from pydantic import ConfigDict, Field
from sqlalchemy.orm import Session

from rigwise.errors import InputError
from rigwise.file_model import FileModel
from rigwise.grid.db import JobRow
from rigwise.grid.harness import MODULE as HARNESS_MODULE
from rigwise.grid.harness import grid_dataset
from rigwise.grid.placement import HardwareProfile
from rigwise.units import parse_bytes
from rigwise.validate_input import load_yaml, validated

KINDS = ("train", "evaluate", "serve", "command")
STATES = ("queued", "running", "succeeded", "failed", "cancelled")
FINAL_STATES = ("succeeded", "failed", "cancelled")


class _Hardware(FileModel):
    model_config = ConfigDict(extra="forbid")
    nodes: int = Field(default=1, ge=1)
    cpus_per_node: float = Field(default=1.0, gt=0)
    gpus_per_node: int = Field(default=0, ge=0)
    min_gpu_memory: str | float = 0
    same_nvlink_domain: bool = False
    same_switch: bool = False
    labels: dict[str, str] = Field(default_factory=dict)


class _Software(FileModel):
    model_config = ConfigDict(extra="forbid")
    env: dict[str, str] = Field(default_factory=dict)
    requires: list[str] = Field(default_factory=list)


class _Template(FileModel):
    model_config = ConfigDict(extra="forbid")
    save_as: str | None = None
    uses: str | None = None


class _JobFile(FileModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=200)
    kind: Literal["train", "evaluate", "serve", "command"]
    hardware: _Hardware = Field(default_factory=lambda: _Hardware())
    software: _Software = Field(default_factory=lambda: _Software())
    app: dict[str, Any] = Field(default_factory=dict)
    template: _Template = Field(default_factory=lambda: _Template())


@dataclass(frozen=True)
class JobSpec:
    name: str
    kind: str
    hardware: HardwareProfile
    env: dict[str, str] = field(default_factory=dict)
    requires: tuple[str, ...] = ()
    app: dict[str, Any] = field(default_factory=dict)
    save_as: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["requires"] = list(self.requires)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobSpec:
        return cls(
            name=data["name"],
            kind=data["kind"],
            hardware=HardwareProfile(**data["hardware"]),
            env=dict(data.get("env", {})),
            requires=tuple(data.get("requires", ())),
            app=dict(data.get("app", {})),
            save_as=data.get("save_as"),
        )


def merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Deep merge of two template mappings; ``override`` wins."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def read_job_text(text: str, where: str) -> dict[str, Any]:
    # the bounded loader: yaml.safe_load expands aliases (a 10-line 'billion laughs' job file
    # ran out of time and memory) and recurses once per nesting level
    data = load_yaml(text, f"Job file {where}")
    if not isinstance(data, dict):
        raise InputError(f"Job file {where} must be a mapping.", hint="See docs/grid.md.")
    return data


def parse_job(data: dict[str, Any], templates: dict[str, dict[str, Any]]) -> JobSpec:
    """A validated ``JobSpec``; ``template.uses`` starts from a saved template."""
    uses = (data.get("template") or {}).get("uses")
    if uses:
        if uses not in templates:
            from rigwise.errors import UnknownNameError, closest

            raise UnknownNameError("template", uses, closest(uses, templates))
        data = merge(templates[uses], {k: v for k, v in data.items() if k != "template"})
        data["template"] = {}
    model = validated(_JobFile, data, "Job file", "See the job template in docs/grid.md.")
    hardware = model.hardware
    profile = HardwareProfile(
        nodes=hardware.nodes,
        cpus_per_node=hardware.cpus_per_node,
        gpus_per_node=hardware.gpus_per_node,
        min_gpu_memory_bytes=parse_bytes(hardware.min_gpu_memory),
        same_nvlink_domain=hardware.same_nvlink_domain,
        same_switch=hardware.same_switch,
        labels=dict(hardware.labels),
    )
    requires = tuple(model.software.requires)
    if model.kind == "evaluate" and eval_tasks(model.app) and HARNESS_MODULE not in requires:
        # a worker without lm-eval then fails the job at once, naming the missing module
        requires = (*requires, HARNESS_MODULE)
    return JobSpec(
        name=model.name,
        kind=model.kind,
        hardware=profile,
        env=dict(model.software.env),
        requires=requires,
        app=dict(model.app),
        save_as=model.template.save_as,
    )


def eval_tasks(app: dict[str, Any]) -> list[str]:
    """An evaluate job's ``app.tasks`` (lm-eval task names or ``grid:<dataset>``), checked:
    a list of distinct non-empty strings."""
    tasks = app.get("tasks", [])
    if not isinstance(tasks, list) or not all(isinstance(t, str) and t.strip() for t in tasks):
        raise InputError(
            f"Job file: app.tasks must be a list of task names (got {tasks!r}).",
            hint="E.g. tasks: [hellaswag, grid:my-choices]; see docs/grid.md.",
        )
    for task in tasks:
        if grid_dataset(task) == "":
            raise InputError(
                f"Job file: app.tasks: {task!r} names no dataset.", hint="Write grid:<dataset>."
            )
        if tasks.count(task) > 1:
            raise InputError(f"Job file: app.tasks lists {task!r} twice.", hint="List it once.")
    return list(tasks)


def template_of(data: dict[str, Any]) -> dict[str, Any]:
    """The reusable part of a job file (everything but the template step)."""
    return {key: value for key, value in data.items() if key != "template"}


def predict_seconds(spec: JobSpec) -> tuple[float | None, str]:
    """Run time predicted by the training planner for a job whose ``app.plan`` holds
    ``rigwise train`` options (e.g. ``{model: llama-3-8b, on: rtx-4090, method: lora,
    tokens: 1e8}``); (None, why) when there is no plan or no planner."""
    options = spec.app.get("plan")
    if spec.kind != "train" or not isinstance(options, dict):
        return None, "no app.plan given"
    try:
        from rigwise.api.train import plan_training
    except ImportError:
        return None, "training planner not installed"
    plan = plan_training(**options)
    if not plan.fits:
        return None, f"planner: {plan.reason}"
    return plan.time_to_train_s, f"planner: {plan.accelerator} x{plan.gpus}"


def job_row(session: Session, job_id: str) -> JobRow:
    """A job's row, or bad input naming the id."""
    row = session.get(JobRow, job_id)
    if row is None:
        raise InputError(f"No job {job_id!r}.", hint="List jobs with `rigwise grid jobs`.")
    return row


def job_dict(row: JobRow) -> dict[str, Any]:
    """A job as the API shows it (its output lines are in ``grid logs``)."""
    return {
        "id": row.id,
        "name": row.name,
        "kind": row.kind,
        "state": row.state,
        "node": row.node,
        "attempts": row.attempts,
        "reason": row.reason,
        "submitter": row.submitter,
        "predicted_seconds": row.predicted_seconds,
        "created_at": row.created_at,
        "started_at": row.started_at,
        "finished_at": row.finished_at,
        "result": {k: v for k, v in (row.result or {}).items() if k != "log"},
    }
