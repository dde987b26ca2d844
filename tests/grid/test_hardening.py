"""The grid's files are its owner's only, uploads are bounded, a vanished Ray worker makes its
node lost at the next pass, and `grid down` stops only the process groups of its own grid."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import test_api
from fastapi.testclient import TestClient

from rigwise.grid.config import make_config
from rigwise.grid.coordinator import create_app
from rigwise.grid.service import GridService


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_database_tokens_and_folder_are_owner_only(tmp_path: Path) -> None:
    service = GridService(make_config(tmp_path / "grid"))
    service.tick()
    root = tmp_path / "grid"
    assert _mode(root) == 0o700
    for name in ("grid.sqlite", "admin-token", "join-token", "ledger-key"):
        assert _mode(root / name) == 0o600, name
    for wal in root.glob("grid.sqlite-*"):
        assert _mode(wal) == 0o600, wal.name


def test_an_old_world_readable_database_is_narrowed(tmp_path: Path) -> None:
    root = tmp_path / "grid"
    GridService(make_config(root))
    (root / "grid.sqlite").chmod(0o644)
    GridService(make_config(root))
    assert _mode(root / "grid.sqlite") == 0o600


def test_checkpoints_are_owner_only(tmp_path: Path) -> None:
    from rigwise.grid.ray_adapter.tasks import private_folder, save_checkpoint

    folder = private_folder(tmp_path / "checkpoints")
    save_checkpoint(folder, "j-1", 20, b"weights")
    save_checkpoint(folder, "j-1", 40, b"weights 2")
    assert _mode(folder) == 0o700
    assert (folder / "j-1.ckpt").read_bytes() == b"weights 2"
    assert (folder / "j-1.step").read_text() == "40"
    assert {_mode(p) for p in folder.iterdir()} == {0o600}


def test_an_upload_over_the_limit_is_refused_with_413(tmp_path: Path) -> None:
    service = GridService(make_config(tmp_path / "grid", max_upload_bytes=1000))
    client = TestClient(create_app(service, scheduler_interval=None))
    admin = {"Authorization": f"Bearer {service.admin_token}"}
    response = client.put("/api/data/big", content=b"x" * 1001, headers=admin)
    assert response.status_code == 413
    assert (
        "1000 bytes" in response.json()["error"] and "--max-upload-mib" in response.json()["hint"]
    )

    def chunks() -> Any:  # no Content-Length: counted as it streams
        yield b"x" * 600
        yield b"x" * 600

    streamed = client.put("/api/data/big", content=chunks(), headers=admin)
    assert streamed.status_code == 413
    assert client.get("/api/data", headers=admin).json() == []
    assert client.put("/api/data/ok", content=b"x" * 1000, headers=admin).status_code == 200


def test_a_node_whose_worker_is_gone_is_lost_at_the_next_pass(tmp_path: Path) -> None:
    service = GridService(make_config(tmp_path / "grid"))
    engine = test_api.InlineEngine()
    service.attach_engine(engine)
    client = TestClient(create_app(service, scheduler_interval=None))
    node = test_api.join(client, service, test_api.facts(), "w")
    assert node["state"] == "admitted"
    del engine.alive[node["id"]]  # Ray no longer lists the worker at all
    service.tick()
    assert service.node(node["id"])["state"] == "lost"
    engine.alive[node["id"]] = True  # it came back
    service.tick()
    assert service.node(node["id"])["state"] == "admitted"


def _group(marker: str) -> subprocess.Popen[bytes]:
    """A process group standing in for Ray daemons whose command line names ``marker``."""
    code = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', " \
           "'import time; time.sleep(120)']); time.sleep(120)"  # fmt: skip
    return subprocess.Popen([sys.executable, "-c", code, marker], start_new_session=True)


def _members(pgid: int) -> list[int]:
    found = []
    for process in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(process.pid) == pgid and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process.pid)
        except (ProcessLookupError, psutil.Error):
            continue
    return found


def test_down_stops_its_own_process_groups_and_no_other(tmp_path: Path) -> None:
    from rigwise.grid.ray_adapter import stop_started

    ours = _group("--gcs-address=127.0.0.1:61001")
    member = _group("--gcs-address=127.0.0.1:61001")  # this machine's member of that grid
    other = _group("--gcs-address=127.0.0.1:61002")  # another Ray cluster on the machine
    try:
        deadline = time.monotonic() + 120  # a busy 2-core box starts Python slowly
        while min(len(_members(p.pid)) for p in (ours, member, other)) < 2:
            assert time.monotonic() < deadline, "the stand-in groups did not start"
            time.sleep(0.1)
        state = {"address": "127.0.0.1:61001", "pgid": ours.pid, "session_dir": ""}
        (tmp_path / "ray-processes.json").write_text(json.dumps(state))
        assert stop_started(tmp_path) == 4  # two groups of two
        assert _members(ours.pid) == [] and _members(member.pid) == []
        assert len(_members(other.pid)) == 2
        assert not (tmp_path / "ray-processes.json").exists()
        assert stop_started(tmp_path) == 0  # nothing recorded any more
    finally:
        for process in (ours, member, other):
            for pid in _members(process.pid):
                os.kill(pid, 9)
            process.wait(timeout=30)
