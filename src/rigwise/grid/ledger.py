"""The credit ledger as a keyed hash chain: every entry carries the hash of the entry before it
and its own, an HMAC-SHA256 (RFC 2104) under a key kept in the grid's data directory (0600),
not in the database. Rows are also refused UPDATE and DELETE by triggers (``grid.db``); the
chain is what catches an edit made around them: a row changed after ``DROP TRIGGER``, a row
inserted by hand (it cannot carry a valid hash without the key), a row deleted from the middle
(the next one's ``prev_hash`` no longer matches). A ``ledger-head`` file, rewritten after each
scheduling pass, holds the last entry's id and hash, so a deleted tail is caught as well.

The chain is checked whenever the ledger is read (``GET /api/credits``, the balance check of a
submission) and by ``rigwise grid credits verify``. Appends happen on the scheduler's thread
under the service lock, one at a time, so the chain does not fork.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from rigwise.errors import GridError
from rigwise.grid import auth, credits
from rigwise.grid.db import LedgerRow
from rigwise.serialize import JsonObject

GENESIS = "0" * 64
KEY_FILE = "ledger-key"
HEAD_FILE = "ledger-head"


def load_key(data_dir: Path) -> bytes:
    """The grid's ledger key (created on first use, owner-only)."""
    secret, _ = auth.read_or_create_secret(data_dir / KEY_FILE)
    return secret.encode("utf-8")


def entry_hash(key: bytes, row: LedgerRow, prev_hash: str) -> str:
    """HMAC of an entry's content and its predecessor's hash (canonical JSON, floats by repr)."""
    content = [
        prev_hash,
        repr(float(row.time)),
        row.account,
        repr(float(row.amount)),
        row.kind,
        row.job_id,
        row.node_id,
        row.detail or {},
    ]
    text = json.dumps(content, sort_keys=True, separators=(",", ":"))
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()


def append(
    session: Session,
    key: bytes,
    account: str,
    amount: float,
    kind: str,
    job_id: str | None = None,
    node_id: str | None = None,
    detail: dict[str, Any] | None = None,
) -> LedgerRow:
    """Add one entry chained to the last one (flushed, so the next append sees it)."""
    last = session.scalars(select(LedgerRow).order_by(LedgerRow.id.desc()).limit(1)).first()
    prev = (last.entry_hash or GENESIS) if last is not None else GENESIS
    row = LedgerRow(
        time=time.time(),
        account=account,
        amount=float(amount),
        kind=kind,
        job_id=job_id,
        node_id=node_id,
        detail=detail or {},
        prev_hash=prev,
    )
    row.entry_hash = entry_hash(key, row, prev)
    session.add(row)
    session.flush()
    return row


@dataclass(frozen=True)
class ChainCheck(JsonObject):
    """The verdict on the ledger: ok, how many entries, and the first problem found."""

    ok: bool
    entries: int
    bad_entry: int | None = None
    problem: str = ""


def _problem(row: LedgerRow, key: bytes, expected_prev: str) -> str:
    if row.entry_hash is None or row.prev_hash is None:
        return "it carries no hash (inserted outside the grid, or by a version without the chain)"
    if row.prev_hash != expected_prev:
        return "its prev_hash does not match the entry before it (an entry was removed or added)"
    if not hmac.compare_digest(row.entry_hash, entry_hash(key, row, row.prev_hash)):
        return "its content does not match its hash (the entry was edited)"
    return ""


def check(rows: list[LedgerRow], key: bytes, head: dict[str, Any] | None = None) -> ChainCheck:
    """Walk the chain in id order; ``head`` (the last recorded entry) catches a cut tail."""
    expected = GENESIS
    hashes: dict[int, str | None] = {}
    for row in rows:
        problem = _problem(row, key, expected)
        if problem:
            return ChainCheck(False, len(rows), row.id, f"entry {row.id}: {problem}")
        expected = str(row.entry_hash)
        hashes[row.id] = row.entry_hash
    if head and hashes.get(int(head["id"])) != head["hash"]:
        return ChainCheck(
            False,
            len(rows),
            int(head["id"]),
            f"entry {head['id']}, the last one recorded in {HEAD_FILE}, is missing or changed "
            "(entries were removed from the end)",
        )
    return ChainCheck(True, len(rows))


def read_head(data_dir: Path) -> dict[str, Any] | None:
    path = data_dir / HEAD_FILE
    if not path.is_file():
        return None
    try:
        head = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"id": -1, "hash": "unreadable"}
    return head if isinstance(head, dict) and {"id", "hash"} <= set(head) else None


def write_head(session: Session, data_dir: Path) -> None:
    """Record the last entry (after its transaction committed)."""
    last = session.scalars(select(LedgerRow).order_by(LedgerRow.id.desc()).limit(1)).first()
    if last is None or last.entry_hash is None:
        return
    head = read_head(data_dir)
    if head is not None and head.get("id") == last.id:
        return
    auth.write_secret(data_dir / HEAD_FILE, json.dumps({"id": last.id, "hash": last.entry_hash}))


def verify(session: Session, key: bytes, data_dir: Path) -> ChainCheck:
    rows = list(session.scalars(select(LedgerRow).order_by(LedgerRow.id)).all())
    return check(rows, key, read_head(data_dir))


def verified_rows(session: Session, key: bytes, data_dir: Path) -> list[LedgerRow]:
    """The ledger's entries, or a GridError when its chain is broken."""
    rows = list(session.scalars(select(LedgerRow).order_by(LedgerRow.id)).all())
    verdict = check(rows, key, read_head(data_dir))
    if not verdict.ok:
        raise GridError(
            f"The credit ledger fails its integrity check: {verdict.problem}.",
            hint="Run `rigwise grid credits verify --data-dir DIR` on the coordinator and "
            "restore grid.sqlite from a backup; no balance is trusted until then.",
        )
    return rows


def listing(rows: list[LedgerRow]) -> dict[str, Any]:
    """Balances and entries of a verified ledger (what ``GET /api/credits`` answers)."""
    entries = [
        {
            "id": r.id,
            "time": r.time,
            "account": r.account,
            "amount": r.amount,
            "kind": r.kind,
            "job_id": r.job_id,
            "node_id": r.node_id,
            "detail": r.detail,
            "hash": r.entry_hash,
        }
        for r in rows
    ]
    totals = credits.balances([(r.account, r.amount) for r in rows])
    return {"balances": totals, "entries": entries, "chain": {"ok": True, "entries": len(rows)}}


def verify_store(data_dir: Path, db_url: str | None = None) -> ChainCheck:
    """``rigwise grid credits verify``: the chain of the grid whose state is in ``data_dir``."""
    from rigwise.errors import InputError
    from rigwise.grid.config import DB_FILE
    from rigwise.grid.db import open_database

    root = data_dir.expanduser().resolve()
    if not (root / KEY_FILE).is_file():
        raise InputError(
            f"No grid ledger key in {str(root)!r} ({KEY_FILE} not found).",
            hint="Pass the --data-dir that `rigwise grid up` used, on the coordinator.",
        )
    url = db_url or f"sqlite:///{root / DB_FILE}"
    path = url.split(":///", 1)[1] if url.startswith("sqlite") and ":///" in url else None
    if path is not None and not Path(path).is_file():  # a check made one and said 'intact'
        raise InputError(
            f"No grid database at {path!r}.",
            hint="Pass the --data-dir (or --db) that `rigwise grid up` used, on the coordinator.",
        )
    sessions = open_database(url)
    with sessions() as session:
        return verify(session, load_key(root), root)
