"""A Ray worker node for a grid whose coordinator runs on this very machine (a loopback grid).

``ray start --address`` refuses to join a cluster on the loopback address (Ray's single-machine
mode, ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, which a loopback grid needs so that Ray keeps to
127.0.0.1). Ray's own multi-node test cluster (``ray.cluster_utils.Cluster.add_node``) adds
nodes to such a cluster by starting a ``ray._private.node.Node`` in process; this module does
the same, in a process of its own: ``python -m rigwise.grid.ray_adapter.member SPEC_JSON``.
It prints ``ready`` once the node runs, keeps it until SIGTERM, then stops its processes (and
Ray's reaper stops them if this process is killed). The grid verifies and uses this node like
any other member.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from typing import Any


def run(spec: dict[str, Any]) -> None:
    import ray._private.node
    import ray._private.parameter

    params = ray._private.parameter.RayParams(
        gcs_address=spec["address"],
        node_ip_address=spec["node_ip"],
        num_cpus=int(spec["num_cpus"]),
        num_gpus=int(spec["num_gpus"]),
        resources=dict(spec.get("resources") or {}),
        labels=dict(spec.get("labels") or {}),
        node_manager_port=0,
        min_worker_port=0,
        max_worker_port=0,
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    node = ray._private.node.Node(params, head=False, shutdown_at_exit=True, spawn_reaper=True)
    print("ready", flush=True)
    while not stop.wait(1.0):
        if node.dead_processes():  # the raylet died: this node is gone
            break
    node.kill_all_processes(check_alive=False, allow_graceful=True)


if __name__ == "__main__":
    run(json.loads(sys.argv[1]))
