"""``rigwise grid`` client commands against a real uvicorn on 127.0.0.1 (no Ray)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from rigwise.cli import main
from rigwise.grid.config import make_config
from rigwise.grid.coordinator import create_app
from rigwise.grid.service import GridService


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[GridService]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    service = GridService(make_config(tmp_path / "grid"))
    config = uvicorn.Config(
        create_app(service, scheduler_interval=None), host="127.0.0.1", port=port, log_level="error"
    )
    runner = uvicorn.Server(config)
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    while not runner.started:
        time.sleep(0.05)
    monkeypatch.setenv("RIGWISE_GRID_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("RIGWISE_GRID_TOKEN", service.admin_token)
    monkeypatch.setenv("HOME", str(tmp_path))  # no saved credential leaks in
    yield service
    runner.should_exit = True
    thread.join(timeout=10)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any, str]:
    code = main(["grid", *args])
    out, err = capsys.readouterr()
    try:
        return code, json.loads(out), err
    except json.JSONDecodeError:
        return code, out, err


def test_submit_job_nodes_data_round_trip(
    server: GridService, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(b"hello grid " * 100)
    code, manifest, _ = run(capsys, "data", "put", str(corpus), "--name", "corpus", "--json")
    assert code == 0 and manifest["size_bytes"] == 1100
    job_file = tmp_path / "job.yaml"
    job_file.write_text("name: t\nkind: train\napp: {dataset: corpus, steps: 5}\n")
    code, submitted, _ = run(capsys, "submit", str(job_file), "--json")
    assert code == 0 and submitted["id"].startswith("j-")
    code, job, _ = run(capsys, "job", submitted["id"], "--json")
    assert code == 0 and job["state"] == "queued" and job["node"] is None
    code, nodes, _ = run(capsys, "nodes", "--json")
    assert code == 0 and nodes == []
    out = tmp_path / "back.txt"
    code, _, _ = run(capsys, "data", "get", "corpus", "-o", str(out))
    assert code == 0 and out.read_bytes() == corpus.read_bytes()
    code, cancelled, _ = run(capsys, "cancel", submitted["id"], "--json")
    assert cancelled["state"] == "cancelled"


def test_wrong_token_and_missing_url_exit_2(
    server: GridService, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "jobs", "--token", "nope")
    assert code == 2 and "401" in err
    monkeypatch.delenv("RIGWISE_GRID_URL")
    code, _, err = run(capsys, "jobs")
    assert code == 2 and "RIGWISE_GRID_URL" in err


def test_bad_job_file_exit_2(
    server: GridService, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job_file = tmp_path / "job.yaml"
    job_file.write_text("name: t\nkind: teleport\n")
    code, _, err = run(capsys, "submit", str(job_file))
    assert code == 2 and "kind" in err


def test_eval_sends_tasks_and_models_shows_their_scores(
    server: GridService, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from rigwise.grid.auth import ADMIN_ACCOUNT, ROLE_ADMIN, Principal
    from rigwise.grid.client import GridClient
    from rigwise.grid.db import JobRow, ModelRow

    admin = Principal(ADMIN_ACCOUNT, ROLE_ADMIN)
    server.data_put(admin, "corpus", b"hello grid " * 100)
    server.data_put(admin, "mc", b'{"context": "a", "choices": ["b", "c"], "label": 0}\n')
    with server.sessions.begin() as session:
        session.add(ModelRow(id="m-1", name="tiny", owner="me", artifact="model:m-1", lineage={}))
    args = ["eval", "m-1", "--dataset", "corpus", "--no-wait"]
    code, queued, _ = run(capsys, *args, "--tasks", "hellaswag, grid:mc", "--json")
    assert code == 0
    with server.sessions() as session:
        row = session.get(JobRow, queued["id"])
        assert row is not None and row.spec["app"]["tasks"] == ["hellaswag", "grid:mc"]
    code, _, err = run(capsys, *args, "--tasks", "grid:nope")
    assert code == 2 and "'nope'" in err
    board = [{"rank": 1, "id": "m-1", "tasks": {"grid:mc": {"acc_stderr": 0.1, "acc": 0.75}}}]
    monkeypatch.setattr(GridClient, "models", lambda self: board)
    code, table, _ = run(capsys, "models")
    assert code == 0 and "grid:mc acc 0.75" in table


def test_node_shows_each_check_and_an_unknown_node_is_bad_input(
    server: GridService, capsys: pytest.CaptureFixture[str], make_facts: Any
) -> None:
    from rigwise.grid.auth import ROLE_JOIN, Principal

    joiner = Principal("join", ROLE_JOIN)
    weak = server.join(joiner, make_facts(measured_flops=1e9), "weak", "me", {})
    code, record, _ = run(capsys, "node", weak["id"], "--json")
    assert code == 0 and record["state"] == "rejected"
    code, out, _ = run(capsys, "node", weak["id"])
    assert code == 0 and f"node {weak['id']} (weak): rejected" in out
    assert "measured_flops" in out and "below the minimum" in out
    code, _, err = run(capsys, "node", "n-nope")
    assert code == 2 and "n-nope" in err


@pytest.mark.parametrize(
    ("url", "says"),
    [
        # before: exit 70 'internal error at _urlparse.py:411: InvalidURL: Invalid port'
        ("http://[::1", "Bad grid URL 'http://[::1': Invalid port"),
        ("not a url", "not http(s)://HOST[:PORT]"),
        ("ftp://host", "not http(s)://HOST[:PORT]"),
    ],
)
def test_a_bad_grid_url_is_bad_input(
    capsys: pytest.CaptureFixture[str], url: str, says: str
) -> None:
    code, _, err = run(capsys, "logs", "job-1", "--url", url, "--token", "t")
    assert code == 2 and says in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("status", "body", "says"),
    [
        # before: exit 70 'internal error at decoder.py:355: JSONDecodeError'
        (200, b"<html>hi</html>", "did not answer JSON to GET /api/jobs"),
        (200, b"[1, 2", "did not answer JSON to GET /api/jobs"),
        # before: 'Grid: None' (an empty 404) and 'Grid: <!DOCTYPE HTML>...', no hint
        (404, b"", "answered 404 to GET /api/jobs without the coordinator's error"),
        (502, b"<!DOCTYPE HTML><p>Bad gateway</p>", "answered 502 to GET /api/jobs"),
        (404, b"[1]", "answered 404 to GET /api/jobs"),
    ],
)
def test_a_server_that_is_no_coordinator_is_named(status: int, body: bytes, says: str) -> None:
    import httpx

    from rigwise.errors import RigwiseError
    from rigwise.grid.client import GridClient

    transport = httpx.MockTransport(lambda request: httpx.Response(status, content=body))
    client = GridClient("http://10.0.0.5:8765", "t", transport=transport)
    with pytest.raises(RigwiseError, match=says) as caught:
        client.jobs()
    assert "rigwise coordinator" in str(caught.value.hint)


def test_data_put_refuses_what_is_not_a_regular_file(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # before: /dev/zero was read whole: memory ran out (exit 70 'MemoryError' under a ulimit).
    # Reading is refused here, so that the test fails before the fix without the memory.
    def no_read(self: Path) -> bytes:
        raise AssertionError(f"{self} was read")

    monkeypatch.setattr(Path, "read_bytes", no_read)
    code, out, _ = run(
        capsys, "data", "put", "/dev/zero", "--url", "http://127.0.0.1:1", "--token", "t", "--json"
    )
    assert code == 2 and "'/dev/zero' is not a regular file" in out["error"]


def test_the_client_gives_up_connecting_sooner_than_on_a_slow_answer() -> None:
    """A coordinator address that never answers (a black-holed host) waited the whole 60 s
    request timeout before saying 'Cannot reach the grid'; connecting now gets 10 s."""
    import httpx

    from rigwise.grid.client import CONNECT_TIMEOUT_S, GridClient

    client = GridClient("http://10.0.0.5:8765", "token")
    assert client._http.timeout == httpx.Timeout(60.0, connect=CONNECT_TIMEOUT_S)
    assert CONNECT_TIMEOUT_S == 10.0
    quick = GridClient("http://10.0.0.5:8765", "token", timeout=2.0)
    assert quick._http.timeout == httpx.Timeout(2.0)  # never longer than the whole request
