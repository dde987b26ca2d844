"""Start, join, stop and attach to the grid's Ray cluster (the ``ray`` CLI and ``ray.init``).

The grid stops only what it started. ``ray start`` runs in a new process session, so every
daemon it leaves (GCS, raylet, agents, and the workers the raylet forks later) shares one
process group; that group, the Ray address and the session folder are written to
``ray-processes.json`` in the grid's data folder, and ``stop_started`` signals that group
(after checking its processes still name that session) plus any process group on this machine
serving that same address (a loopback member started by ``grid join``). Nothing else is
touched: ``ray stop --force`` would end every Ray cluster on the machine.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import ray

from rigwise.errors import GridError
from rigwise.grid.auth import ray_auth_env, write_secret

HEAD_RESOURCE = "rigwise-head"
NAMESPACE = "rigwise"
SINK_NAME = "rigwise-checkpoints"
SERVE_CPUS = 0.1  # per replica: more than 0 keeps it off the head (which has num_cpus=0)
SERVE_DEPLOYMENT = "TinyLMReplica"
SERVE_TIMEOUT_S = 120.0
STORE_TIMEOUT_S = 60.0  # a storage node that does not answer in this time counts as missing
PROCESS_FILE = "ray-processes.json"
STOP_GRACE_S = 15.0  # SIGTERM, then SIGKILL for what is still running after this
# Ray's GCS declares a raylet dead after `failure_threshold` failed checks, one every
# `period_ms` (Ray's defaults: 3 s apart). The grid's head checks every second: a killed worker
# refuses the check at once, so it is reported within ~5 s, while a live but busy one must
# miss five 3-s timeouts in a row first (RayConfig reads these RAY_<name> variables).
HEALTH_CHECK = {"period_ms": 1000, "timeout_ms": 3000, "failure_threshold": 5}
HEALTH_CHECK_ENV = {f"RAY_health_check_{key}": str(value) for key, value in HEALTH_CHECK.items()}


def _ray_executable() -> str:
    return str(Path(sys.executable).with_name("ray"))


# Ray gives a new raylet a fixed 30 s to register with the GCS (ray/_private/node.py); a busy
# machine can miss that, so a start that timed out is cleaned up and tried again.
START_ATTEMPTS = 3
START_TIMED_OUT = "timed out during startup"


def _ray_cli(args: list[str], ray_token: str, extra_env: dict[str, str] | None = None) -> int:
    """Run ``ray ARGS`` in a new process session; its process group id (= its pid)."""
    env = {**os.environ, **ray_auth_env(ray_token), **(extra_env or {})}
    for attempt in range(1, START_ATTEMPTS + 1):
        process = subprocess.Popen(
            [_ray_executable(), *args],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        _, stderr = process.communicate()
        if process.returncode == 0:
            return process.pid
        stop_group(process.pid)  # what the failed start left behind
        if START_TIMED_OUT not in stderr or attempt == START_ATTEMPTS:
            break
    tail = "\n".join(stderr.splitlines()[-5:])
    raise GridError(f"`ray {args[0]}` failed: {tail}", hint="Check the address and ports.")


def _group(pgid: int) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(process.pid) == pgid:
                found.append(process)
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    return found


def _cmdline(process: psutil.Process) -> str:
    try:
        return " ".join(process.cmdline())
    except psutil.Error:
        return ""


def _session_dir(pgid: int) -> str:
    """The Ray session folder the processes of group ``pgid`` write to ('' if none)."""
    for process in _group(pgid):
        for part in _cmdline(process).split():
            if part.startswith(("--session-dir=", "--session_dir=")):
                return part.split("=", 1)[1]
            if part.startswith("--log_dir=") and part.endswith("/logs"):
                return part.split("=", 1)[1].removesuffix("/logs")
    return ""


def start_head(host: str, port: int, ray_token: str, data_dir: Path | None = None) -> str:
    """Start a Ray head bound to ``host`` with no CPUs for jobs (the coordinator's machine),
    recording its processes in ``data_dir`` so ``grid down`` stops exactly those; a head
    recorded there and still running is reused."""
    address = f"{host}:{port}"
    recorded = read_started(data_dir) if data_dir is not None else None
    if recorded and recorded["address"] == address and _owned(recorded):
        return address
    pgid = _ray_cli(
        [
            "start",
            "--head",
            f"--node-ip-address={host}",
            f"--port={port}",
            f"--ray-client-server-port={_free_port(host)}",
            "--num-cpus=0",
            f"--resources={json.dumps({HEAD_RESOURCE: 1})}",
            "--include-dashboard=false",
            "--disable-usage-stats",
        ],
        ray_token,
        HEALTH_CHECK_ENV,
    )
    if data_dir is not None:
        state = {"address": address, "pgid": pgid, "session_dir": _session_dir(pgid)}
        write_secret(data_dir / PROCESS_FILE, json.dumps(state))
    return address


def _free_port(host: str) -> int:
    import socket

    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def read_started(data_dir: Path) -> dict[str, Any] | None:
    path = data_dir / PROCESS_FILE
    if not path.is_file():
        return None
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) and {"address", "pgid"} <= set(state) else None


def _owned(state: dict[str, Any]) -> list[psutil.Process]:
    """The recorded group's processes, if they still belong to the recorded session (a pid
    reused by an unrelated process since is never signalled)."""
    members = _group(int(state["pgid"]))
    marker = str(state.get("session_dir") or state["address"])
    return members if any(marker in _cmdline(p) for p in members) else []


def _serving(address: str) -> set[int]:
    """Process groups on this machine whose Ray processes name ``address`` as their GCS."""
    flags = (f"--gcs-address={address}", f"--gcs_address={address}", f"--address={address}")
    groups = set()
    for process in psutil.process_iter(["pid"]):
        line = _cmdline(process)
        if any(flag in line for flag in flags):
            try:
                groups.add(os.getpgid(process.pid))
            except (ProcessLookupError, PermissionError):
                continue
    return groups


def stop_started(data_dir: Path) -> int:
    """Stop the Ray processes this grid started (its head's group, and every group serving its
    address on this machine); the number of processes signalled. Other Ray clusters live on."""
    state = read_started(data_dir)
    if state is None:
        return 0
    targets = {p.pid: p for p in _owned(state)}
    own_group = os.getpgrp()
    for group in _serving(str(state["address"])) - {own_group}:
        targets.update({p.pid: p for p in _group(group)})
    targets.pop(os.getpid(), None)
    _terminate(list(targets.values()))
    (data_dir / PROCESS_FILE).unlink(missing_ok=True)
    return len(targets)


def stop_group(pgid: int) -> int:
    """Stop one process group this process started (a Ray worker the agent started)."""
    members = [p for p in _group(pgid) if p.pid != os.getpid()]
    _terminate(members)
    return len(members)


def _running(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _wait_gone(processes: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """The processes still running after up to ``timeout`` s (an exited one is gone, even
    while it waits for its parent to reap it)."""
    deadline = time.monotonic() + timeout
    alive = [p for p in processes if _running(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [p for p in alive if _running(p)]
    return alive


def _terminate(processes: list[psutil.Process]) -> None:
    for process in processes:
        try:
            process.send_signal(signal.SIGTERM)
        except psutil.Error:
            continue
    for process in _wait_gone(processes, STOP_GRACE_S):
        try:
            process.kill()
        except psutil.Error:
            continue
    _wait_gone(processes, 5.0)


def start_worker(
    address: str,
    ray_token: str,
    node_ip: str,
    num_cpus: int,
    num_gpus: int,
    labels: dict[str, str],
    resources: dict[str, float] | None = None,
) -> int:
    """Start this machine's Ray worker advertising the grid's labels and custom resources;
    its process group id (what ``stop_group`` stops)."""
    label_text = ",".join(f"{key}={value}" for key, value in sorted(labels.items()))
    return _ray_cli(
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


MEMBER_START_TIMEOUT_S = 120.0


def start_member(
    address: str,
    ray_token: str,
    node_ip: str,
    num_cpus: int,
    num_gpus: int,
    labels: dict[str, str],
    resources: dict[str, float] | None = None,
) -> int:
    """Start a Ray worker node on this machine for a loopback grid (``member.py``); its
    process group id. Waits until the node runs, or says why it did not."""
    import tempfile

    spec = {
        "address": address,
        "node_ip": node_ip,
        "num_cpus": num_cpus,
        "num_gpus": num_gpus,
        "labels": labels,
        "resources": resources or {},
    }
    env = {**os.environ, **ray_auth_env(ray_token), "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
    command = [sys.executable, "-m", "rigwise.grid.ray_adapter.member", json.dumps(spec)]
    tail = ""
    for _ in range(START_ATTEMPTS):
        with tempfile.TemporaryFile("w+") as errors:
            process = subprocess.Popen(
                command,
                env=env,
                stdout=subprocess.PIPE,
                stderr=errors,
                text=True,
                start_new_session=True,
            )
            if _wait_ready(process):
                return process.pid
            stop_group(process.pid)
            process.wait(timeout=60)
            errors.seek(0)
            text = errors.read()
            tail = " | ".join(text.strip().splitlines()[-3:])
        if START_TIMED_OUT not in text:
            break
    raise GridError(
        f"This machine's Ray worker for the grid at {address} did not start: {tail}",
        hint="Check that the coordinator runs (rigwise grid up) and its Ray port is free.",
    )


def _wait_ready(process: subprocess.Popen[str]) -> bool:
    """Whether the member printed ``ready`` within the time allowed."""
    import selectors

    assert process.stdout is not None
    deadline = time.monotonic() + MEMBER_START_TIMEOUT_S
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if selector.select(timeout=1.0):
                line = process.stdout.readline()
                if line.strip() == "ready":
                    return True
                if not line:  # it exited
                    return False
    return False
