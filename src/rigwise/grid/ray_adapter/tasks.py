"""What runs on the cluster's nodes: job bodies, the grid's verification benchmark, chunk
reads/writes on storage nodes, checkpoints on the head, and Ray Train's per-rank loop."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import ray
from ray.util.placement_group import PlacementGroup

from rigwise.errors import GridError
from rigwise.grid import runtime
from rigwise.grid.placement import NODE_ID_LABEL, PlacementPlan, label_value
from rigwise.grid.storage import DirectoryStore

SINK_NAME = "rigwise-checkpoints"
STORE_TIMEOUT_S = 60.0  # a storage node that does not answer in this time counts as missing


def _write_private(path: Path, blob: bytes) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)  # a leftover file keeps its old mode otherwise
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(blob)


def private_folder(directory: Path) -> Path:
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    directory.chmod(0o700)
    return directory


def save_checkpoint(directory: Path, job_id: str, step: int, blob: bytes) -> None:
    """Write a job's checkpoint and its step, each 0600, each replaced atomically."""
    for name, content in ((f"{job_id}.ckpt", blob), (f"{job_id}.step", str(step).encode())):
        part = directory / f"{name}.part"
        _write_private(part, content)
        os.replace(part, directory / name)


@ray.remote(num_cpus=0)
class CheckpointSink:
    """Checkpoints kept on the head node's disk, so a job resumes on any node; the folder is
    0700 and every file 0600 (weights and data are the submitter's)."""

    def __init__(self, directory: str) -> None:
        self.directory = private_folder(Path(directory))

    def save(self, job_id: str, step: int, blob: bytes) -> None:
        save_checkpoint(self.directory, job_id, step, blob)

    def load(self, job_id: str) -> bytes | None:
        path = self.directory / f"{job_id}.ckpt"
        return path.read_bytes() if path.exists() else None


@ray.remote(max_retries=0)
def _run_job(
    kind: str,
    app: dict[str, Any],
    requires: list[str],
    inputs: dict[str, bytes],
    job_id: str,
    sink: Any,
) -> dict[str, Any]:
    resume = ray.get(sink.load.remote(job_id))

    def save(step: int, blob: bytes) -> None:
        ray.get(sink.save.remote(job_id, step, blob))

    return runtime.run_job(kind, app, requires, inputs, resume, save)


@ray.remote(max_retries=0)
def _verify_node(claimed: dict[str, Any], payload: list[Any]) -> dict[str, Any]:
    """The grid's measurement of the node this runs on (see ``rigwise.grid.verify``); the
    payload refs are wrapped in a list so Ray does not fetch them before the clock starts. The
    second, small one is pulled first, untimed: the first pull to a node sets up the transfer."""
    from rigwise.grid.verify import measure_node

    ray.get(payload[1])

    def fetch() -> int:
        return len(ray.get(payload[0]))

    return measure_node(claimed["disk_path"], claimed["site"], claimed["switch"], fetch)


@ray.remote(num_cpus=0, max_retries=0)
def _write_chunks(directory: str, chunks: dict[str, bytes]) -> None:
    DirectoryStore("node", Path(directory)).write(chunks)


@ray.remote(num_cpus=0, max_retries=0)
def _read_chunks(directory: str, digests: list[str]) -> dict[str, bytes | None]:
    return DirectoryStore("node", Path(directory)).read(digests)


class NodeStore:
    """A storage-role node's dataset directory, read and written by Ray tasks pinned to the
    node (no CPU asked, so they run beside the node's jobs)."""

    def __init__(self, name: str, node_id: str, directory: str) -> None:
        self.name, self.directory = name, directory
        self.selector = {NODE_ID_LABEL: label_value(node_id)}

    def read(self, digests: list[str]) -> dict[str, bytes | None]:
        task = _read_chunks.options(label_selector=self.selector)
        try:
            found = ray.get(task.remote(self.directory, digests), timeout=STORE_TIMEOUT_S)
        except (ray.exceptions.RayError, OSError):
            return dict.fromkeys(digests)  # unreachable: every chunk counts as missing here
        return dict(found)

    def write(self, chunks: dict[str, bytes]) -> None:
        task = _write_chunks.options(label_selector=self.selector)
        try:
            ray.get(task.remote(self.directory, chunks), timeout=STORE_TIMEOUT_S)
        except (ray.exceptions.RayError, OSError) as exc:
            raise GridError(f"store {self.name} was not written: {type(exc).__name__}") from exc


def _train_rank(config: dict[str, Any]) -> dict[str, Any] | None:
    """Ray Train's per-worker loop: one rank of a data-parallel train job."""
    import ray.train

    context = ray.train.get_context()
    labels = ray.get_runtime_context().get_node_labels()
    sink, driver, job_id = config["sink"], config["driver"], config["job_id"]

    def save(step: int, blob: bytes) -> None:
        ray.get(sink.save.remote(job_id, step, blob))

    def on_start(workers: list[str]) -> None:
        # the worker group's placement group, so a cancel can free it (see RayEngine.release)
        ray.get(driver.started.remote(workers, ray.util.get_current_placement_group()))

    return runtime.run_train_rank(
        config["app"],
        config["requires"],
        ray.get(config["inputs"]),
        ray.get(sink.load.remote(job_id)),
        save,
        context.get_world_rank(),
        context.get_world_size(),
        str(labels.get(NODE_ID_LABEL, "unknown")),
        on_start,
    )


@ray.remote
class _TrainDriver:
    """Runs one multi-node train job's ``TorchTrainer`` (``fit`` blocks, so the actor is
    threaded: ``workers`` answers while ``run`` trains)."""

    def __init__(self) -> None:
        self.workers: list[str] = []
        self.group: PlacementGroup | None = None

    def started(self, workers: list[str], group: PlacementGroup | None) -> None:
        self.workers, self.group = list(workers), group

    def workers_of(self) -> list[str]:
        return self.workers

    def group_of(self) -> PlacementGroup | None:
        return self.group

    def run(self, job: dict[str, Any], plan: PlacementPlan, storage: str) -> dict[str, Any]:
        from ray.train import FailureConfig, RunConfig, ScalingConfig
        from ray.train.torch import TorchConfig, TorchTrainer

        bundle = dict(plan.bundles[0])
        # the type: ignores below: Ray Train V2 (the default in current Ray) takes a loop that
        # returns a value, worker label selectors, and gives Result.return_value; ray's
        # annotations still describe V1
        trainer = TorchTrainer(
            _train_rank,  # type: ignore[arg-type]
            train_loop_config={
                **job,
                "inputs": ray.put(job["inputs"]),
                "driver": ray.get_runtime_context().current_actor,
            },
            torch_config=TorchConfig(backend="gloo"),  # the tiny model trains on CPU
            scaling_config=ScalingConfig(
                num_workers=len(plan.bundles),
                use_gpu=bundle.get("GPU", 0) > 0,
                resources_per_worker=bundle,
                placement_strategy=plan.strategy,
                label_selector=[dict(selector) for selector in plan.bundle_label_selector],
            ),  # type: ignore[call-arg]
            # the grid requeues a failed job itself, from the sink's checkpoint
            run_config=RunConfig(
                name=f"{job['job_id']}-{os.urandom(4).hex()}",
                storage_path=storage,
                failure_config=FailureConfig(max_failures=0),
            ),
        )
        value = trainer.fit().return_value  # type: ignore[attr-defined]
        if not isinstance(value, dict):
            raise GridError("Rank 0 of the train job returned no result.")
        return value
