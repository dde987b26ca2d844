"""A grid on one machine, as a user tries it first: `rigwise grid up`, then `rigwise grid join`
to it from the same box (a loopback member, measured and verified by the grid like any node),
a job that succeeds, a coordinator restart that keeps the job, a wrong token refused, and
`rigwise grid down` that stops this grid's Ray and leaves another Ray cluster running."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
import yaml

from rigwise.grid.client import GridClient

# a hung test fails with a traceback (SIGALRM in this thread) and the session goes on to its
# summary; the default "thread" method would end the whole process
pytestmark = [
    pytest.mark.ray_cluster,
    pytest.mark.slow,
    pytest.mark.timeout(1200, method="signal"),
]

START_S = 240.0  # generous: a busy 2-core machine starts Ray heads in ~30-60 s
JOB_S = 300.0
# the claims come from this machine's own probe and benchmark; the grid re-measures them
POLICY = {
    "min_cpu_cores": 1,
    "min_memory_bytes": 1e9,
    "min_disk_free_bytes": 5e8,
    "min_measured_flops": 1e9,
    "min_memory_bandwidth_bytes_per_s": 5e8,
    # The link is loopback, timed as one 8 MB download from the coordinator while this test's
    # grid, Ray member and job share a 2-core CI box: it once came out under 12.5 MB/s twice
    # and the join was rejected (CI of d19b204). The link speed is not what this test checks
    # (tests/grid/test_verify.py and test_ray_cluster.py measure it), so it asks for 1 MB/s.
    "min_network_bytes_per_s": 1e6,
}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _alive(pgid: int) -> list[int]:
    found = []
    for process in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(process.pid) == pgid and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process.pid)
        except (ProcessLookupError, psutil.Error):
            continue
    return found


class Box:
    """One machine: a home folder, the grid's data folder, its coordinator process."""

    def __init__(self, root: Path) -> None:
        self.data_dir = root / "grid"
        self.env = {**os.environ, "HOME": str(root / "home")}
        for key in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_ADDRESS"):
            self.env.pop(key, None)  # the grid sets its own
        (root / "home").mkdir()
        self.policy = root / "policy.yaml"
        self.policy.write_text(yaml.safe_dump({"admission": POLICY}))
        self.port, self.ray_port = _free_port(), _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[str] | None = None

    def rigwise(self, *args: str, timeout: float = START_S) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "rigwise", *args]
        return subprocess.run(
            command, env=self.env, capture_output=True, text=True, timeout=timeout, check=False
        )

    def up(self) -> str:
        command = [sys.executable, "-m", "rigwise", "grid", "up", "--data-dir", str(self.data_dir),
                   "--port", str(self.port), "--ray-port", str(self.ray_port),
                   "--policy", str(self.policy)]  # fmt: skip
        log = (self.data_dir.parent / "coordinator.log").open("a")
        self.process = subprocess.Popen(
            command, env=self.env, stdout=subprocess.PIPE, stderr=log, text=True
        )
        assert self.process.stdout is not None
        first = self.process.stdout.readline()
        assert first.startswith("join token: "), (first, self.log_tail())
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline:
            try:
                httpx.get(f"{self.url}/api/nodes", timeout=5)
                return first.split(": ", 1)[1].strip()
            except httpx.HTTPError:
                time.sleep(0.3)
        raise AssertionError(f"the coordinator did not answer: {self.log_tail()}")

    def log_tail(self) -> str:
        path = self.data_dir.parent / "coordinator.log"
        return path.read_text()[-2000:] if path.exists() else ""

    def kill_coordinator(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=60)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=60)
        self.rigwise("grid", "down", "--data-dir", str(self.data_dir))


@pytest.fixture
def other_ray(tmp_path: Path) -> Iterator[int]:
    """Another Ray cluster on this machine (someone else's): its process group id."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    ray = str(Path(sys.executable).with_name("ray"))
    command = [ray, "start", "--head", "--node-ip-address=127.0.0.1",
               f"--port={_free_port()}", f"--ray-client-server-port={_free_port()}",
               "--num-cpus=0", "--include-dashboard=false", "--disable-usage-stats"]  # fmt: skip
    env["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    for _ in range(3):  # Ray gives a raylet 30 s to register: a busy box may need another try
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        started = subprocess.Popen(command, env=env, start_new_session=True, **quiet)
        if started.wait(timeout=START_S) == 0:
            break
        for pid in _alive(started.pid):
            os.kill(pid, signal.SIGKILL)
    assert started.returncode == 0, "another Ray cluster could not be started"
    try:
        yield started.pid
    finally:  # stopped by its group, as the grid stops its own
        for pid in _alive(started.pid):
            os.kill(pid, signal.SIGKILL)


def _wait(admin: GridClient, job_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + JOB_S
    while time.monotonic() < deadline:
        job: dict[str, Any] = admin.job(job_id)
        if job["state"] in ("succeeded", "failed", "cancelled"):
            return job
        time.sleep(0.5)
    raise AssertionError(f"job {job_id} did not finish")


def test_one_machine_grid_up_join_job_restart_and_down(tmp_path: Path, other_ray: int) -> None:
    box = Box(tmp_path)
    try:
        join_token = box.up()
        joined = box.rigwise("grid", "join", box.url, "--token", join_token, "--json")
        assert joined.returncode == 0, (joined.stdout, joined.stderr[-2000:], box.log_tail())
        answer = json.loads(joined.stdout)
        assert answer["state"] == "admitted", answer
        assert answer["verification"]["state"] == "passed"  # measured by the grid, on this box
        assert "credential" not in answer and Path(answer["credential_file"]).is_file()
        admin = GridClient(box.url, (box.data_dir / "admin-token").read_text().strip())
        hello = [sys.executable, "-c", "print('hello from the grid')"]
        job = {"name": "hello", "kind": "command", "app": {"command": hello}}
        job_id = admin.submit(job)["id"]
        done = _wait(admin, job_id)
        assert done["state"] == "succeeded" and done["node"] == answer["id"], done
        logs = [entry["message"] for entry in admin.logs(job_id)]
        assert any("hello from the grid" in line for line in logs)

        box.kill_coordinator()
        box.up()  # same data folder: the Ray head it recorded is reused
        assert admin.job(job_id)["state"] == "succeeded"
        assert {n["id"]: n["state"] for n in admin.nodes()}[answer["id"]] == "admitted"
        wrong = httpx.get(f"{box.url}/api/jobs", headers={"Authorization": "Bearer wrong"})
        assert wrong.status_code == 401

        recorded = json.loads((box.data_dir / "ray-processes.json").read_text())
        box.kill_coordinator()
        down = box.rigwise("grid", "down", "--data-dir", str(box.data_dir), "--json")
        assert down.returncode == 0, down.stderr[-2000:]
        assert json.loads(down.stdout)["stopped"] >= 2
        assert _alive(int(recorded["pgid"])) == []  # the grid's head is gone
        serving = [p for p in psutil.process_iter(["cmdline"])
                   if recorded["address"] in " ".join(p.info["cmdline"] or [])]  # fmt: skip
        assert serving == []  # and so is this machine's member of it
        assert len(_alive(other_ray)) >= 3  # the other Ray cluster runs on
    finally:
        box.stop()
