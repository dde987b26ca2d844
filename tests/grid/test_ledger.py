"""The credit ledger's hash chain: every way of editing grid.sqlite behind the grid's back
that the triggers do not stop is reported on read, by the API and by `grid credits verify`."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from rigwise.cli import main
from rigwise.grid import ledger
from rigwise.grid.config import make_config
from rigwise.grid.coordinator import create_app
from rigwise.grid.service import GridService


@pytest.fixture
def grid(tmp_path: Path) -> tuple[GridService, Path]:
    """A grid with four chained entries, the head recorded as after a scheduling pass."""
    service = GridService(make_config(tmp_path / "grid"))
    with service.sessions.begin() as session:
        for account, amount in (("alice", 5.0), ("bob", 3.0), ("alice", -1.5), ("bob", 2.0)):
            ledger.append(session, service.ledger_key, account, amount, "earn", "j-1", "n-1")
    service.tick()  # no engine: the pass only records the ledger's head
    return service, tmp_path / "grid" / "grid.sqlite"


def _sql(database: Path, *statements: str) -> None:
    with sqlite3.connect(database) as connection:
        for statement in statements:
            connection.execute(statement)


def _drop_triggers(database: Path, then: str) -> None:
    _sql(database, "DROP TRIGGER ledger_no_update", "DROP TRIGGER ledger_no_delete", then)


def _forged_insert(database: Path) -> None:
    """A row with a hash computed the way an attacker without the key would: plain SHA-256."""
    with sqlite3.connect(database) as connection:
        last = connection.execute("SELECT entry_hash FROM ledger ORDER BY id DESC").fetchone()[0]
        forged = hashlib.sha256(f"{last}mallory1000".encode()).hexdigest()
        connection.execute(
            "INSERT INTO ledger (time, account, amount, kind, detail, prev_hash, entry_hash) "
            f"VALUES (1.0, 'mallory', 1000.0, 'earn', '{{}}', '{last}', '{forged}')"
        )


TAMPERING: dict[str, tuple[Callable[[Path], None], str]] = {
    "insert without a hash": (
        lambda db: _sql(
            db,
            "INSERT INTO ledger (time, account, amount, kind, detail) "
            "VALUES (1.0, 'mallory', 1000.0, 'earn', '{}')",
        ),
        "entry 5: it carries no hash",
    ),
    "insert with a forged hash": (_forged_insert, "entry 5: its content does not match"),
    "update after DROP TRIGGER": (
        lambda db: _drop_triggers(db, "UPDATE ledger SET amount = 500.0 WHERE id = 2"),
        "entry 2: its content does not match",
    ),
    "account changed after DROP TRIGGER": (
        lambda db: _drop_triggers(db, "UPDATE ledger SET account = 'mallory' WHERE id = 1"),
        "entry 1: its content does not match",
    ),
    "middle entry deleted": (
        lambda db: _drop_triggers(db, "DELETE FROM ledger WHERE id = 3"),
        "entry 4: its prev_hash does not match",
    ),
    "last entry deleted": (
        lambda db: _drop_triggers(db, "DELETE FROM ledger WHERE id = 4"),
        "entry 4, the last one recorded",
    ),
}


def test_an_intact_ledger_verifies_and_reads(grid: tuple[GridService, Path]) -> None:
    service, _ = grid
    assert service.verify_ledger().ok
    read = service.ledger()
    assert read["balances"] == {"alice": 3.5, "bob": 5.0} and read["chain"]["entries"] == 4
    entries = read["entries"]
    assert all(len(e["hash"]) == 64 for e in entries) and len({e["hash"] for e in entries}) == 4


@pytest.mark.parametrize("case", sorted(TAMPERING))
def test_every_edit_behind_the_grids_back_is_detected(
    grid: tuple[GridService, Path], case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    service, database = grid
    tamper, expected = TAMPERING[case]
    tamper(database)
    verdict = service.verify_ledger()
    assert not verdict.ok and expected in verdict.problem, verdict
    # read through the API: refused, with the same finding, and no balance shown
    client = TestClient(create_app(service, scheduler_interval=None))
    admin = {"Authorization": f"Bearer {service.admin_token}"}
    response = client.get("/api/credits", headers=admin)
    assert response.status_code == 409 and expected in response.json()["error"]
    # and by the command an operator runs on the coordinator
    data_dir = str(database.parent)
    assert main(["grid", "credits", "verify", "--data-dir", data_dir, "--json"]) == 1
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert report["ok"] is False and expected in report["problem"]


def test_verify_command_passes_an_intact_ledger_and_names_a_missing_grid(
    grid: tuple[GridService, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, database = grid
    assert main(["grid", "credits", "verify", "--data-dir", str(database.parent)]) == 0
    assert "ledger intact: 4 entries" in capsys.readouterr().out
    assert main(["grid", "credits", "verify", "--data-dir", str(tmp_path / "none")]) == 2


@pytest.mark.parametrize(
    ("db", "says"),
    [
        # before: exit 0 '{"ok": true, "entries": 0}' after creating the folder and the file
        ("sqlite:///{tmp}/nowhere/grid.sqlite", "No grid database at"),
        # before: exit 70 'internal error at db.py: DatabaseError: file is not a database'
        ("sqlite:///{tmp}/garbage.sqlite", "file is not a database"),
        # before: exit 70 'internal error at psycopg.py: ModuleNotFoundError' (no psycopg here)
        ("postgresql://u:secret@127.0.0.1:1/db", "postgresql://...@127.0.0.1:1/db"),
    ],
)
def test_verify_names_a_database_it_cannot_read(
    grid: tuple[GridService, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], db, says
) -> None:  # type: ignore[no-untyped-def]
    if db.startswith("postgresql"):
        try:
            import psycopg  # noqa: F401

            pytest.skip("psycopg is installed: the URL is read")
        except ImportError:
            pass
    (tmp_path / "garbage.sqlite").write_text("garbage")
    _, database = grid
    url = db.format(tmp=tmp_path)
    args = ["grid", "credits", "verify", "--data-dir", str(database.parent), "--db", url]
    assert main([*args, "--json"]) == 2
    out = capsys.readouterr().out
    assert says in json.loads(out)["error"] and "secret" not in out
    assert not (tmp_path / "nowhere").exists()
