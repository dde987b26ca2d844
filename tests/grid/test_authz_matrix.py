"""The grid's authorisation matrix: every route x every kind of credential.

Kinds: the admin token, an admitted node's credential (account ``owner-a``), a verifying
node's, a rejected node's, the join token, no token, and a wrong token. Another admitted
member (``owner-b``) and the admin own the objects the callers reach for. Each case says who
may call; everyone else must be refused (401 or 403) with no change to the database or to the
grid's stored chunks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import test_api
from fastapi.testclient import TestClient
from sqlalchemy import select

from rigwise.grid import ledger
from rigwise.grid.config import make_config
from rigwise.grid.coordinator import create_app
from rigwise.grid.db import Base, DatasetRow, ModelRow
from rigwise.grid.service import GridService

KINDS = ("admin", "member", "verifying", "rejected", "join", "none", "wrong")
MEMBERS = {"admin", "member"}  # may read the grid's shared state and act on their own
JOINERS = {"admin", "member", "join"}
ADMIN = {"admin"}
NOBODY: set[str] = set()
OWN_RECORD = {"admin", "member", "verifying", "rejected"}  # GET /api/nodes/<its own id>

TEMPLATE_JOB = {**test_api.TRAIN, "name": "t", "template": {"save_as": "tiny-template"}}
COMMAND_JOB = {"name": "c", "kind": "command", "app": {"command": ["true"]}}
PLAIN_JOB = {**test_api.TRAIN, "name": "p", "template": {}}

# (method, path with {placeholders}, JSON body or raw content, who may call)
ROUTES: list[tuple[str, str, Any, set[str]]] = [
    ("POST", "/api/join", "join", JOINERS),
    ("POST", "/api/join", "join-as-admin", {"admin", "member"}),
    ("POST", "/api/join", "join-as-b", {"admin", "member"}),
    ("GET", "/api/speedtest?size_bytes=10", None, JOINERS),
    ("GET", "/api/nodes", None, MEMBERS),
    ("GET", "/api/nodes/{self}", None, OWN_RECORD),
    ("GET", "/api/nodes/{node_b}", None, MEMBERS),
    ("GET", "/api/jobs", None, MEMBERS),
    ("GET", "/api/jobs/{job_b}", None, MEMBERS),
    ("POST", "/api/jobs", {"job": PLAIN_JOB}, MEMBERS),
    ("POST", "/api/jobs", {"job": COMMAND_JOB}, ADMIN),
    ("POST", "/api/jobs", {"job": TEMPLATE_JOB}, ADMIN),  # replaces the admin's template
    ("GET", "/api/jobs/{job_b}/logs", None, ADMIN),
    ("GET", "/api/jobs/{job_a}/logs", None, MEMBERS),
    ("POST", "/api/jobs/{job_b}/cancel", None, ADMIN),
    ("POST", "/api/jobs/{job_admin}/cancel", None, ADMIN),
    ("POST", "/api/jobs/{job_a}/cancel", None, MEMBERS),
    ("GET", "/api/data", None, MEMBERS),
    ("GET", "/api/data/corpus", None, MEMBERS),
    ("PUT", "/api/data/corpus", b"poisoned", ADMIN),
    ("PUT", "/api/data/b-data", b"poisoned", ADMIN),
    ("PUT", "/api/data/a-data", b"mine again", MEMBERS),
    ("PUT", "/api/data/new-{kind}", b"fresh", MEMBERS),
    ("PUT", "/api/data/model:m-1", b"fake weights", NOBODY),
    ("GET", "/api/credits", None, MEMBERS),
    ("GET", "/api/models", None, MEMBERS),
    ("POST", "/api/models/m-1/eval", {"dataset": "corpus"}, MEMBERS),
    ("POST", "/api/models/m-1/run", {"prompt": "a", "tokens": 2}, MEMBERS),
]
CASES = [(i, kind) for i in range(len(ROUTES)) for kind in KINDS]


def _join(client: TestClient, token: str, name: str, owner: str) -> dict[str, Any]:
    body = {"facts": test_api.facts().to_dict(), "name": name, "owner": owner, "labels": {}}
    response = client.post("/api/join", json=body, headers={"Authorization": f"Bearer {token}"})
    response.raise_for_status()
    return dict(response.json())


class World:
    """The grid the matrix runs against, with one credential of each kind."""

    def __init__(self, root: Path, corpus: bytes) -> None:
        self.service = service = GridService(make_config(root, replicas=1))
        self.engine = engine = test_api.InlineEngine()
        service.attach_engine(engine)
        self.client = client = TestClient(create_app(service, scheduler_interval=None))
        admin = {"Authorization": f"Bearer {service.admin_token}"}
        client.put("/api/data/corpus", content=corpus, headers=admin).raise_for_status()
        a = test_api.join(client, service, test_api.facts(), "a")
        b = test_api.join(client, service, test_api.facts(), "b")
        engine.measured = test_api.facts(measured_flops=1e9)  # the grid measures it slow
        rejected = test_api.join(client, service, test_api.facts(), "liar")
        engine.measured = None
        verifying = _join(client, service.join_token, "slow", "owner-slow")
        assert (a["state"], b["state"], rejected["state"]) == ("admitted",) * 2 + ("rejected",)
        self.tokens = {
            "admin": service.admin_token,
            "member": a["credential"],
            "verifying": verifying["credential"],
            "rejected": rejected["credential"],
            "join": service.join_token,
            "none": "",
            "wrong": "not-a-token",
        }
        self.node_of = {"member": a["id"], "verifying": verifying["id"], "rejected": rejected["id"]}
        as_a = {"Authorization": f"Bearer {a['credential']}"}
        as_b = {"Authorization": f"Bearer {b['credential']}"}
        client.put("/api/data/a-data", content=b"a's", headers=as_a).raise_for_status()
        client.put("/api/data/b-data", content=b"b's", headers=as_b).raise_for_status()
        self.ids = {
            "node_b": b["id"],
            "job_a": self._submit(as_a, "a-job"),
            "job_b": self._submit(as_b, "b-job"),
            "job_admin": self._submit(admin, "admin-job", save_as="tiny-template"),
        }
        with service.sessions.begin() as session:
            weights = service.stores(session).put("model:m-1", b"weights", 1).to_dict()
            session.add(DatasetRow(name="model:m-1", manifest=weights, owner="admin"))
            session.add(ModelRow(id="m-1", name="tiny", owner="admin", artifact="model:m-1",
                                 lineage={}))  # fmt: skip
            ledger.append(session, service.ledger_key, "owner-a", 1.0, "earn")

    def _submit(self, headers: dict[str, str], name: str, save_as: str = "") -> str:
        job = {**test_api.TRAIN, "name": name, "template": {"save_as": save_as} if save_as else {}}
        response = self.client.post("/api/jobs", json={"job": job}, headers=headers)
        response.raise_for_status()
        return str(response.json()["id"])

    def snapshot(self) -> tuple[Any, ...]:
        """Every row of every table, and every stored chunk file."""
        with self.service.sessions() as session:
            rows = [
                sorted(map(repr, session.execute(select(table)).all()))
                for table in Base.metadata.sorted_tables
            ]
        root = self.service.config.storage_dir
        files = sorted((str(p), p.read_bytes()) for p in root.rglob("*") if p.is_file())
        return (rows, files)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    yield World(tmp_path_factory.mktemp("matrix"), test_api.make_corpus_bytes())


def _request(world: World, index: int, kind: str) -> Any:
    method, path, body, _ = ROUTES[index]
    path = path.format(self=world.node_of.get(kind, world.ids["node_b"]), kind=kind, **world.ids)
    token = world.tokens[kind]
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if body in ("join", "join-as-admin", "join-as-b"):
        owner = {"join": f"owner-new-{kind}", "join-as-admin": "admin", "join-as-b": "owner-b"}
        facts = test_api.facts().to_dict()
        payload = {"facts": facts, "name": f"n-{kind}", "owner": owner[body], "labels": {}}
        return world.client.request(method, path, json=payload, headers=headers)
    if isinstance(body, bytes):
        return world.client.request(method, path, content=body, headers=headers)
    return world.client.request(method, path, json=body, headers=headers)


@pytest.mark.parametrize(("index", "kind"), CASES)
def test_route_for_credential(world: World, index: int, kind: str) -> None:
    method, path, _, allowed = ROUTES[index]
    before = world.snapshot()
    response = _request(world, index, kind)
    if kind in allowed:
        assert response.status_code == 200, (method, path, kind, response.text)
        return
    expected = {401} if kind in ("none", "wrong") else {403}
    assert response.status_code in expected, (method, path, kind, response.status_code)
    assert "error" in response.json()
    assert world.snapshot() == before, f"{method} {path} as {kind} changed the grid"


GENERIC = {
    "{self}": "{node_id}",
    "{node_b}": "{node_id}",
    "{job_a}": "{job_id}",
    "{job_b}": "{job_id}",
    "{job_admin}": "{job_id}",
    "corpus": "{name}",
    "m-1": "{reference}",
}


def _generic(path: str) -> str:
    for concrete, placeholder in GENERIC.items():
        path = path.replace(concrete, placeholder)
    return path.split("?")[0]


def test_the_matrix_covers_every_route(world: World) -> None:
    """A route added to the API without a row here fails this test."""
    routes = {
        (method, route.path)  # type: ignore[attr-defined]
        for route in world.client.app.routes  # type: ignore[attr-defined]
        if route.path.startswith("/api/")  # type: ignore[attr-defined]
        for method in route.methods  # type: ignore[attr-defined]
    }
    covered = {(method, _generic(path)) for method, path, _, _ in ROUTES}
    assert routes <= covered, routes - covered


def test_joining_as_someone_else_gives_your_own_account(world: World) -> None:
    """A member joining another machine gets its own account whatever it claims; a joiner
    with the join token cannot take the admin's or a live member's account."""
    answer = _request(world, 1, "member").json()  # claims owner "admin"
    assert answer["owner"] == "owner-a"
    assert _request(world, 2, "join").status_code == 403  # claims owner-b with the join token
