"""``RayEngine``: the grid scheduler's hands on Ray (launch, follow, release jobs; verify nodes;
reach storage nodes; answer serve requests)."""

from __future__ import annotations

import contextlib
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ray
from ray.util.placement_group import (
    PlacementGroup,
    placement_group,
    placement_group_table,
    remove_placement_group,
)
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from rigwise.grid.placement import NODE_ID_LABEL, PlacementPlan, label_value
from rigwise.grid.policy import MachineFacts
from rigwise.grid.ray_adapter.cluster import HEAD_RESOURCE
from rigwise.grid.ray_adapter.serve import ServeFront
from rigwise.grid.ray_adapter.tasks import (
    SINK_NAME,
    CheckpointSink,
    NodeStore,
    _run_job,
    _TrainDriver,
    _verify_node,
)


@dataclass
class _Running:
    refs: list[Any]
    group: PlacementGroup | None
    driver: Any = None
    served: Future[dict[str, Any]] | None = None


# Pulled, untimed, before the payload: the first transfer to a node also sets up the object
# managers' connection (~30 ms on a loopback pair of Ray nodes, as much as the 8 MB pull itself),
# which is not the link's speed. Above Ray's 100 KB inline limit, so it travels the same path.
WARM_UP_BYTES = 256_000


class RayEngine:
    """Jobs in flight in this coordinator process (lost with it; the database is the truth)."""

    def __init__(self, checkpoint_dir: Path, payload_bytes: int = 8_000_000) -> None:
        self.payload_bytes = payload_bytes
        self.verifying: dict[str, tuple[Any, Any]] = {}  # node id -> (result ref, payload refs)
        self.train_storage = str(checkpoint_dir / "ray-train")
        self.sink = CheckpointSink.options(  # type: ignore[attr-defined]
            name=SINK_NAME,
            lifetime="detached",
            get_if_exists=True,
            resources={HEAD_RESOURCE: 0.001},
        ).remote(str(checkpoint_dir))
        self.running: dict[str, _Running] = {}
        # serve requests wait on Ray Serve (deploying, answering) off the scheduler's thread
        self.serve_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="rigwise-serve")
        self.serve_front = ServeFront()

    def launch(
        self,
        job_id: str,
        kind: str,
        app: dict[str, Any],
        requires: list[str],
        env: dict[str, str],
        plan: PlacementPlan,
        inputs: dict[str, bytes],
    ) -> None:
        if kind == "train" and len(plan.bundles) > 1:
            self._launch_data_parallel(job_id, app, requires, env, plan, inputs)
            return
        if kind == "serve":
            future = self.serve_pool.submit(
                self.serve_front.answer, app, env, plan, inputs["weights"]
            )
            self.running[job_id] = _Running([], None, served=future)
            return
        group = placement_group(
            [dict(bundle) for bundle in plan.bundles],
            strategy=plan.strategy,
            bundle_label_selector=[dict(selector) for selector in plan.bundle_label_selector],
        )
        # command jobs run once per bundle (rank = bundle index); the other kinds on bundle 0
        ranks = range(len(plan.bundles)) if kind == "command" else range(1)
        refs: list[Any] = []
        try:
            for rank in ranks:
                bundle = plan.bundles[rank]
                rank_env = {**env, "RIGWISE_RANK": str(rank), "RIGWISE_WORLD_SIZE": str(len(ranks))}
                refs.append(
                    _run_job.options(
                        num_cpus=bundle.get("CPU", 0),
                        num_gpus=bundle.get("GPU", 0),
                        scheduling_strategy=PlacementGroupSchedulingStrategy(group, rank),
                        runtime_env={"env_vars": rank_env},
                    ).remote(kind, app, requires, inputs, job_id, self.sink)
                )
        except BaseException:
            _undo(refs, group)  # the job is not in `running`: release() would never find them
            raise
        self.running[job_id] = _Running(refs, group)

    def _launch_data_parallel(
        self,
        job_id: str,
        app: dict[str, Any],
        requires: list[str],
        env: dict[str, str],
        plan: PlacementPlan,
        inputs: dict[str, bytes],
    ) -> None:
        driver = _TrainDriver.options(  # type: ignore[attr-defined]
            num_cpus=0,
            max_concurrency=4,
            resources={HEAD_RESOURCE: 0.001},
            runtime_env={"env_vars": dict(env)},
        ).remote()
        job = {"job_id": job_id, "app": app, "requires": requires, "inputs": inputs}
        job["sink"] = self.sink
        try:
            ref = driver.run.remote(job, plan, self.train_storage)
        except BaseException:
            with contextlib.suppress(*_CLEAN_UP_ERRORS):
                ray.kill(driver)  # else the driver actor lives on, idle, for no job
            raise
        self.running[job_id] = _Running([ref], None, driver)

    @staticmethod
    def node_store(name: str, node_id: str, directory: str) -> NodeStore:
        return NodeStore(name, node_id, directory)

    def verify(self, node_id: str, cpus: float, gpus: int, claimed: MachineFacts) -> None:
        """Run the grid's measurement on ``node_id``'s Ray worker, holding all it offers."""
        payload = ray.put(bytes(self.payload_bytes))
        warm_up = ray.put(bytes(WARM_UP_BYTES))
        ref = _verify_node.options(
            num_cpus=cpus,
            num_gpus=gpus,
            label_selector={NODE_ID_LABEL: label_value(node_id)},
        ).remote(claimed.to_dict(), [payload, warm_up])
        self.verifying[node_id] = (ref, (payload, warm_up))

    def verification(self, node_id: str) -> tuple[str, Any]:
        """('absent', None) when none is in flight in this process, ('running', None),
        ('done', measured facts as a dict) or ('error', why)."""
        entry = self.verifying.get(node_id)
        if entry is None:
            return "absent", None
        ready, _ = ray.wait([entry[0]], timeout=0)
        if not ready:
            return "running", None
        del self.verifying[node_id]
        try:
            return "done", ray.get(entry[0])
        except ray.exceptions.RayTaskError as exc:
            return "error", str(exc.cause if exc.cause is not None else exc).splitlines()[-1]
        except (ray.exceptions.RayError, OSError) as exc:
            return "error", type(exc).__name__

    def _workers(self, job_id: str) -> list[str]:
        """Grid node ids of a data-parallel job's ranks, once its process group is up."""
        driver = self.running[job_id].driver
        try:
            return list(ray.get(driver.workers_of.remote(), timeout=10))
        except (ray.exceptions.RayError, OSError):
            return []

    def placed(self, job_id: str) -> bool:
        served = self.running[job_id].served
        if served is not None:
            return served.done()
        group = self.running[job_id].group
        if group is None:
            return bool(self._workers(job_id))
        ready, _ = ray.wait([group.ready()], timeout=0)
        return bool(ready)

    def node_of(self, job_id: str) -> str | None:
        """The grid node id holding bundle 0 (rank 0) of the job, once placed (a serve job:
        the node of the replica that answered)."""
        served = self.running[job_id].served
        if served is not None:
            if not served.done() or served.exception() is not None:
                return None
            return str(served.result().get("node")) or None
        group = self.running[job_id].group
        if group is None:
            workers = self._workers(job_id)
            return workers[0] if workers else None
        table = placement_group_table(group)
        ray_node = (table.get("bundles_to_node_id") or {}).get(0)
        for node in ray.nodes():
            if node["NodeID"] == ray_node:
                return str(node.get("Labels", {}).get(NODE_ID_LABEL)) or None
        return None

    def poll(self, job_id: str) -> tuple[str, Any]:
        """('running', None) | ('done', result) | ('lost', why) | ('error', why); a job is done
        when every rank is, and its result is rank 0's with every rank's log."""
        served = self.running[job_id].served
        if served is not None:
            return _served(served)
        refs = self.running[job_id].refs
        ready, waiting = ray.wait(refs, num_returns=len(refs), timeout=0)
        results = []
        for ref in ready:
            try:
                results.append(ray.get(ref))
            except ray.exceptions.RayTaskError as exc:
                if self._lost_worker(job_id):
                    return "lost", "a training worker's node died"
                return "error", str(exc.cause if exc.cause is not None else exc).splitlines()[-1]
            except (ray.exceptions.RayError, OSError) as exc:
                return "lost", type(exc).__name__
        if waiting:
            return "running", None
        ordered = [ray.get(ref) for ref in refs]
        first = dict(ordered[0])
        for rank, other in enumerate(ordered[1:], start=1):
            first["log"] = [*first.get("log", []), *(f"[rank {rank}] {x}" for x in other["log"])]
        return "done", first

    def _lost_worker(self, job_id: str) -> bool:
        """Whether a node holding a rank of a data-parallel job has died."""
        if self.running[job_id].driver is None:
            return False
        alive = self.alive_nodes()
        return any(not alive.get(node, False) for node in self._workers(job_id))

    def release(self, job_id: str, cancel: bool = False) -> None:
        entry = self.running.pop(job_id, None)
        if entry is None:
            return
        if entry.served is not None:
            entry.served.cancel()  # a request already sent to the replica runs to its end
            return
        if entry.driver is not None:
            # killing the driver ends the Ray Train controller it owns, and with it the workers;
            # their placement group would outlive them (it is scoped to the coordinator's job)
            group = None
            if cancel:
                try:
                    group = ray.get(entry.driver.group_of.remote(), timeout=10)
                except (ray.exceptions.RayError, OSError):
                    group = None
            ray.kill(entry.driver)
            if group is not None:
                remove_placement_group(group)
            return
        if cancel:
            for ref in entry.refs:
                ray.cancel(ref, force=True)
        if entry.group is not None:
            remove_placement_group(entry.group)

    @staticmethod
    def alive_nodes() -> dict[str, bool]:
        """Grid node id -> is a Ray node carrying it alive."""
        alive: dict[str, bool] = {}
        for node in ray.nodes():
            grid_id = node.get("Labels", {}).get(NODE_ID_LABEL)
            if grid_id:
                alive[grid_id] = alive.get(grid_id, False) or bool(node.get("Alive"))
        return alive


# Clean-up after a failed launch: an error here must not hide the launch's own.
_CLEAN_UP_ERRORS = (ray.exceptions.RayError, OSError, ValueError)


def _undo(refs: list[Any], group: PlacementGroup) -> None:
    """Cancel the ranks a launch that failed part-way had started and remove its placement
    group, which would otherwise hold its bundles' CPUs and GPUs for the coordinator's life."""
    for ref in refs:
        with contextlib.suppress(*_CLEAN_UP_ERRORS):
            ray.cancel(ref, force=True)
    with contextlib.suppress(*_CLEAN_UP_ERRORS):
        remove_placement_group(group)


def _served(future: Future[dict[str, Any]]) -> tuple[str, Any]:
    """A serve request's state, in ``RayEngine.poll``'s terms."""
    if not future.done():
        return "running", None
    error = future.exception()
    if error is None:
        return "done", future.result()
    if isinstance(error, (ray.exceptions.RayActorError, ray.exceptions.NodeDiedError)):
        return "lost", type(error).__name__
    lines = str(error).strip().splitlines()
    return "error", f"Ray Serve: {lines[-1] if lines else type(error).__name__}"
