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
and Ray nodes bind to the grid address given (``--node-ip-address``), never 0.0.0.0. The grid
stops only the Ray processes it started (``cluster.stop_started``), never ``ray stop``.
"""

from rigwise.grid.ray_adapter.cluster import (
    HEAD_RESOURCE,
    NAMESPACE,
    connect,
    read_started,
    start_head,
    start_member,
    start_worker,
    stop_group,
    stop_started,
)
from rigwise.grid.ray_adapter.engine import RayEngine
from rigwise.grid.ray_adapter.serve import serve_app_name, serve_status
from rigwise.grid.ray_adapter.tasks import NodeStore

__all__ = [
    "HEAD_RESOURCE",
    "NAMESPACE",
    "NodeStore",
    "RayEngine",
    "connect",
    "read_started",
    "serve_app_name",
    "serve_status",
    "start_head",
    "start_member",
    "start_worker",
    "stop_group",
    "stop_started",
]
