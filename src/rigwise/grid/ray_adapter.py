"""The only grid module importing ``ray``: start/attach nodes, gang-schedule jobs with placement
groups, run multi-node train jobs with Ray Train, serve models with Ray Serve, keep checkpoints
on the head, and report node liveness.

A train job on several nodes runs as a ``ray.train.torch.TorchTrainer`` (gloo backend, one
worker per node: ``STRICT_SPREAD`` with the placement plan's label selectors, so the workers
land on qualifying admitted nodes only), driven by a ``_TrainDriver`` actor on the head; rank 0
checkpoints through the same sink as a single-node job and returns the weights.

A serve job (``grid run``) is answered by a Ray Serve application, one per model
(``rigwise-<model id>``): Serve is started with no HTTP proxy (``proxy_location="Disabled"``),
the replica (``TinyLMReplica``, ``SERVE_CPUS`` CPU, pinned by the plan's label selector to
qualifying admitted nodes) loads the registered weights once, and the coordinator's driver calls
it through a ``DeploymentHandle``; a later run of the same model reuses the application. The
Serve controller is a detached actor on the head node (Serve puts it there), so it outlives a
coordinator restart.

Security: the coordinator turns on Ray token authentication (``RAY_AUTH_MODE=token``, Ray >=
2.52, https://docs.ray.io/en/latest/ray-security/token-auth.html) for every process it starts,
and Ray nodes bind to the grid address given (``--node-ip-address``), never 0.0.0.0.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
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

from rigwise.errors import GridError
from rigwise.grid import runtime
from rigwise.grid.auth import ray_auth_env
from rigwise.grid.placement import NODE_ID_LABEL, PlacementPlan, label_value
from rigwise.grid.policy import MachineFacts

HEAD_RESOURCE = "rigwise-head"
NAMESPACE = "rigwise"
SINK_NAME = "rigwise-checkpoints"
SERVE_CPUS = 0.1  # per replica: more than 0 keeps it off the head (which has num_cpus=0)
SERVE_DEPLOYMENT = "TinyLMReplica"
SERVE_TIMEOUT_S = 120.0


def _ray_cli(args: list[str], ray_token: str) -> None:
    executable = str(Path(sys.executable).with_name("ray"))
    env = {**os.environ, **ray_auth_env(ray_token)}
    done = subprocess.run([executable, *args], env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = "\n".join(done.stderr.splitlines()[-5:])
        raise GridError(f"`ray {args[0]}` failed: {tail}", hint="Check the address and ports.")


def start_head(host: str, port: int, ray_token: str) -> str:
    """Start a Ray head bound to ``host`` with no CPUs for jobs (the coordinator's machine);
    a head left running by a previous ``grid up`` on that address is reused."""
    try:
        _start_head(host, port, ray_token)
    except GridError as exc:
        if "already running" not in str(exc):
            raise
    return f"{host}:{port}"


def _start_head(host: str, port: int, ray_token: str) -> None:
    _ray_cli(
        [
            "start",
            "--head",
            f"--node-ip-address={host}",
            f"--port={port}",
            "--num-cpus=0",
            f"--resources={json.dumps({HEAD_RESOURCE: 1})}",
            "--include-dashboard=false",
            "--disable-usage-stats",
        ],
        ray_token,
    )


def stop_ray(ray_token: str) -> None:
    """Stop the Ray processes of this machine (the head ``grid up`` started, or a worker)."""
    _ray_cli(["stop", "--force"], ray_token)


def start_worker(
    address: str, ray_token: str, node_ip: str, num_cpus: int, num_gpus: int, labels: dict[str, str]
) -> None:
    """Start this machine's Ray worker advertising the grid's labels."""
    label_text = ",".join(f"{key}={value}" for key, value in sorted(labels.items()))
    _ray_cli(
        [
            "start",
            f"--address={address}",
            f"--node-ip-address={node_ip}",
            f"--num-cpus={num_cpus}",
            f"--num-gpus={num_gpus}",
            f"--labels={label_text}",
            "--disable-usage-stats",
        ],
        ray_token,
    )


def connect(address: str, ray_token: str) -> None:
    """Attach this process (the coordinator) to the grid's Ray cluster as a driver."""
    os.environ.update(ray_auth_env(ray_token))
    if not ray.is_initialized():
        ray.init(
            address=address, namespace=NAMESPACE, log_to_driver=False, logging_level=logging.WARNING
        )


@ray.remote(num_cpus=0)
class CheckpointSink:
    """Checkpoints kept on the head node's disk, so a job resumes on any node."""

    def __init__(self, directory: str) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def save(self, job_id: str, step: int, blob: bytes) -> None:
        path = self.directory / f"{job_id}.ckpt"
        temporary = path.with_suffix(".part")
        temporary.write_bytes(blob)
        os.replace(temporary, path)
        (self.directory / f"{job_id}.step").write_text(str(step))

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
    payload ref is wrapped in a list so Ray does not fetch it before the clock starts."""
    from rigwise.grid.verify import measure_node

    def fetch() -> int:
        return len(ray.get(payload[0]))

    return measure_node(claimed["disk_path"], claimed["site"], claimed["switch"], fetch)


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


def serve_app_name(model_id: str) -> str:
    """The Ray Serve application serving ``model_id`` (one per model)."""
    return f"rigwise-{model_id}"


class TinyLMReplica:
    """A Ray Serve replica holding one registered tiny model (loaded once, CPU)."""

    def __init__(self, model_id: str, weights: bytes) -> None:
        from rigwise.grid import tinylm

        self.model_id = model_id
        self.model, self.config = tinylm.load(weights)
        labels = ray.get_runtime_context().get_node_labels()
        self.node = str(labels.get(NODE_ID_LABEL, "unknown"))

    def generate(self, prompt: str, tokens: int) -> dict[str, Any]:
        from rigwise.grid import tinylm

        text = tinylm.sample(self.model, self.config, prompt, tokens)
        return {"text": text, "tokens": tokens, "node": self.node, "model": self.model_id}


def serve_status() -> dict[str, Any]:
    """Ray Serve on the connected cluster: ``{"applications": {name: status}, "proxies": N}``
    (no controller yet: no applications)."""
    from ray import serve

    status = serve.status()
    applications = {name: str(app.status.value) for name, app in status.applications.items()}
    return {"applications": applications, "proxies": len(status.proxies)}


@dataclass
class _Running:
    refs: list[Any]
    group: PlacementGroup | None
    driver: Any = None
    served: Future[dict[str, Any]] | None = None


class RayEngine:
    """Jobs in flight in this coordinator process (lost with it; the database is the truth)."""

    def __init__(self, checkpoint_dir: Path, payload_bytes: int = 8_000_000) -> None:
        self.payload_bytes = payload_bytes
        self.verifying: dict[str, tuple[Any, Any]] = {}  # node id -> (result ref, payload ref)
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
        self.serve_lock = threading.Lock()
        self.serve_started = False

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
            future = self.serve_pool.submit(self._serve, app, env, plan, inputs["weights"])
            self.running[job_id] = _Running([], None, served=future)
            return
        group = placement_group(
            [dict(bundle) for bundle in plan.bundles],
            strategy=plan.strategy,
            bundle_label_selector=[dict(selector) for selector in plan.bundle_label_selector],
        )
        # command jobs run once per bundle (rank = bundle index); the other kinds on bundle 0
        ranks = range(len(plan.bundles)) if kind == "command" else range(1)
        refs = []
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
        ref = driver.run.remote(job, plan, self.train_storage)
        self.running[job_id] = _Running([ref], None, driver)

    def _serve(
        self, app: dict[str, Any], env: dict[str, str], plan: PlacementPlan, weights: bytes
    ) -> dict[str, Any]:
        """Answer one run request through the model's Serve application (deployed first when
        it is not running)."""
        from ray import serve

        started = time.perf_counter()
        model_id = str(app["model"])
        name, reused = self._deployment(model_id, env, plan, weights)
        handle = serve.get_app_handle(name)
        prompt, tokens = str(app.get("prompt", "")), int(app.get("tokens", 64))
        answer = dict(handle.generate.remote(prompt, tokens).result(timeout_s=SERVE_TIMEOUT_S))
        how = "reused" if reused else "deployed"
        answer.update(
            serve_app=name,
            deployment=SERVE_DEPLOYMENT,
            reused=reused,
            seconds=time.perf_counter() - started,
            log=[f"Ray Serve application {name} ({how}) answered on node {answer['node']}"],
        )
        return answer

    def _deployment(
        self, model_id: str, env: dict[str, str], plan: PlacementPlan, weights: bytes
    ) -> tuple[str, bool]:
        """(application name, whether it was already running); deploys it when it is not."""
        from ray import serve

        name = serve_app_name(model_id)
        with self.serve_lock:
            if not self.serve_started:
                # no HTTP proxy: the coordinator's authenticated API is the only way in
                serve.start(proxy_location="Disabled")
                self.serve_started = True
            current = serve.status().applications.get(name)
            if current is not None and str(current.status.value) in ("RUNNING", "DEPLOYING"):
                return name, True
            options: dict[str, Any] = {"num_cpus": SERVE_CPUS}
            if plan.bundle_label_selector:
                options["label_selector"] = dict(plan.bundle_label_selector[0])
            if env:
                options["runtime_env"] = {"env_vars": dict(env)}
            deployment = serve.deployment(
                name=SERVE_DEPLOYMENT, num_replicas=1, ray_actor_options=options
            )(TinyLMReplica)
            serve.run(deployment.bind(model_id, weights), name=name, route_prefix=None)
            return name, False

    def verify(self, node_id: str, cpus: float, gpus: int, claimed: MachineFacts) -> None:
        """Run the grid's measurement on ``node_id``'s Ray worker, holding all it offers."""
        payload = ray.put(bytes(self.payload_bytes))
        ref = _verify_node.options(
            num_cpus=cpus,
            num_gpus=gpus,
            label_selector={NODE_ID_LABEL: label_value(node_id)},
        ).remote(claimed.to_dict(), [payload])
        self.verifying[node_id] = (ref, payload)

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
