"""The O.I. store: an append-only event log and time series in SQLite.

Same conventions as the rest of rigwise (``rigwise.bench.calibration``): one file in the user
data dir, or in ``$RIGWISE_DATA_DIR``. Events can be appended, never changed: triggers refuse
UPDATE and DELETE on ``events``. Each append commits (WAL, synchronous=FULL) before the caller
acts, which is what makes a restart safe: a dose is logged as an intent before the pump runs.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rigwise.errors import InputError

DB_NAME = "oi.sqlite3"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    t_s REAL NOT NULL,
    kind TEXT NOT NULL,
    rule_version TEXT NOT NULL DEFAULT '',
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_kind ON events (kind, id);
CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TABLE IF NOT EXISTS series (t_s REAL NOT NULL, name TEXT NOT NULL, value REAL);
CREATE INDEX IF NOT EXISTS series_name ON series (name, t_s);
CREATE TABLE IF NOT EXISTS experiments (
    id TEXT PRIMARY KEY, state TEXT NOT NULL, spec TEXT NOT NULL, result TEXT,
    submitted_s REAL NOT NULL, reason TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS leases (
    mea TEXT NOT NULL, electrode INTEGER NOT NULL, experiment_id TEXT NOT NULL,
    PRIMARY KEY (mea, electrode)
);
CREATE TABLE IF NOT EXISTS calibrations (
    id TEXT PRIMARY KEY, pump TEXT NOT NULL, data TEXT NOT NULL, created_s REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS sim_world (id INTEGER PRIMARY KEY CHECK (id = 1), data TEXT NOT NULL);
"""


def _refuse_foreign(db: sqlite3.Connection, path: str) -> None:
    """An SQLite file with tables but no ``events`` belongs to something else: opening it
    as a store turned it to WAL and added our tables (``oi status --db app.sqlite3``)."""
    rows = db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    tables = sorted(str(name) for (name,) in rows if not str(name).startswith("sqlite_"))
    if tables and "events" not in tables:
        db.close()
        shown = ", ".join(tables[:5]) + (" ..." if len(tables) > 5 else "")
        raise InputError(
            f"{path!r} is not an O.I. store (an SQLite file with tables {shown}); left as it is.",
            hint="Pass --db with a new path, or the store `rigwise oi init` made.",
        )


@dataclass(frozen=True)
class Event:
    id: int
    t_s: float
    kind: str
    rule_version: str
    data: dict[str, Any]


def default_db_path() -> Path:
    from rigwise.bench.calibration import data_dir

    return data_dir() / DB_NAME


class Store:
    def __init__(self, path: str | Path = ":memory:") -> None:
        self.path = str(path)
        if self.path != ":memory:":
            parent = Path(self.path).parent
            if not parent.is_dir():
                raise InputError(
                    f"Folder {str(parent)!r} for the O.I. store does not exist.",
                    hint="Create it, or pass --db with an existing folder.",
                )
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None)
            _refuse_foreign(self.db, self.path)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
            self.db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise InputError(
                f"{self.path!r} is not an O.I. store ({exc}).",
                hint="Pass --db with a new path, or run `rigwise oi init`.",
            ) from exc

    def close(self) -> None:
        self.db.close()

    # -- events ---------------------------------------------------------------------------------
    def append(self, kind: str, t_s: float, data: dict[str, Any], rule_version: str = "") -> int:
        cur = self.db.execute(
            "INSERT INTO events (t_s, kind, rule_version, data) VALUES (?, ?, ?, ?)",
            (t_s, kind, rule_version, json.dumps(data, default=str)),
        )
        return int(cur.lastrowid or 0)

    def events(
        self, kinds: tuple[str, ...] = (), since_id: int = 0, limit: int = 100_000
    ) -> list[Event]:
        sql = "SELECT id, t_s, kind, rule_version, data FROM events WHERE id > ?"
        args: list[Any] = [since_id]
        if kinds:
            sql += f" AND kind IN ({','.join('?' * len(kinds))})"
            args += list(kinds)
        rows = self.db.execute(sql + " ORDER BY id LIMIT ?", [*args, limit]).fetchall()
        return [Event(r[0], r[1], r[2], r[3], json.loads(r[4])) for r in rows]

    def last_event(self, kinds: tuple[str, ...] = ()) -> Event | None:
        sql = "SELECT id, t_s, kind, rule_version, data FROM events"
        args: list[Any] = []
        if kinds:
            sql += f" WHERE kind IN ({','.join('?' * len(kinds))})"
            args = list(kinds)
        r = self.db.execute(sql + " ORDER BY id DESC LIMIT 1", args).fetchone()
        return None if r is None else Event(r[0], r[1], r[2], r[3], json.loads(r[4]))

    # -- time series -------------------------------------------------------------------------------
    def add_series(self, rows: list[tuple[float, str, float | None]]) -> None:
        if rows:
            self.db.execute("BEGIN")
            self.db.executemany("INSERT INTO series VALUES (?, ?, ?)", rows)
            self.db.execute("COMMIT")

    def series(
        self, name: str, since_s: float = -1e18, limit: int = 5000
    ) -> list[tuple[float, float]]:
        rows = self.db.execute(
            "SELECT t_s, value FROM series WHERE name = ? AND t_s >= ? ORDER BY t_s DESC LIMIT ?",
            (name, since_s, limit),
        ).fetchall()
        return [(float(t), float(v)) for t, v in reversed(rows) if v is not None]

    def series_names(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT DISTINCT name FROM series ORDER BY name")]

    # -- simulated world (the simulator's physical state, kept apart from the controller's) ------
    def save_world(self, data: dict[str, Any]) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO sim_world (id, data) VALUES (1, ?)", (json.dumps(data),)
        )

    def load_world(self) -> dict[str, Any] | None:
        r = self.db.execute("SELECT data FROM sim_world WHERE id = 1").fetchone()
        return None if r is None else dict(json.loads(r[0]))

    # -- calibrations -----------------------------------------------------------------------------
    def save_calibration(self, cal_id: str, pump: str, data: dict[str, Any], t_s: float) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO calibrations VALUES (?, ?, ?, ?)",
            (cal_id, pump, json.dumps(data), t_s),
        )

    def calibrations(self) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "SELECT id, pump, data, created_s FROM calibrations ORDER BY created_s"
        ).fetchall()
        return [{"id": r[0], "pump": r[1], "created_s": r[3], **json.loads(r[2])} for r in rows]
