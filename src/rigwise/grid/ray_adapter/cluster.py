"""Start, join, stop and attach to the grid's Ray cluster (the ``ray`` CLI and ``ray.init``)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import ray

from rigwise.errors import GridError
from rigwise.grid.auth import ray_auth_env

HEAD_RESOURCE = "rigwise-head"
NAMESPACE = "rigwise"
SINK_NAME = "rigwise-checkpoints"
SERVE_CPUS = 0.1  # per replica: more than 0 keeps it off the head (which has num_cpus=0)
SERVE_DEPLOYMENT = "TinyLMReplica"
SERVE_TIMEOUT_S = 120.0
STORE_TIMEOUT_S = 60.0  # a storage node that does not answer in this time counts as missing


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
    address: str,
    ray_token: str,
    node_ip: str,
    num_cpus: int,
    num_gpus: int,
    labels: dict[str, str],
    resources: dict[str, float] | None = None,
) -> None:
    """Start this machine's Ray worker advertising the grid's labels and custom resources."""
    label_text = ",".join(f"{key}={value}" for key, value in sorted(labels.items()))
    _ray_cli(
        [
            "start",
            f"--address={address}",
            f"--node-ip-address={node_ip}",
            f"--num-cpus={num_cpus}",
            f"--num-gpus={num_gpus}",
            f"--labels={label_text}",
            f"--resources={json.dumps(resources or {})}",
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
