"""Bench runs and the efficiency factors they measure, in SQLite, keyed by machine fingerprint.

The database lives in the user data dir (``platformdirs``), or in ``$RIGWISE_DATA_DIR`` when set
(tests use that). ``load_calibration(accelerator_id)`` returns this machine's latest measured
factors for one accelerator: the keys planners accept as ``calibration`` (catalog/SCHEMA.md):
``decode_bandwidth_efficiency``, ``prefill_compute_efficiency``, ``matmul_efficiency_<dtype>``,
``memory_bandwidth_efficiency``.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rigwise.errors import InputError
from rigwise.serialize import JsonObject
from rigwise.units import GiB

DATA_DIR_ENV = "RIGWISE_DATA_DIR"
DB_NAME = "calibration.sqlite3"
# A measured efficiency outside (0.05, 1.0] is physics telling us the peak it was divided by is
# not this machine's (a 2-vCPU VM matched to a 24-channel server gave 0.002): never stored.
EFFICIENCY_BOUNDS = (0.05, 1.0)
CALIBRATION_KEYS_PREFIXES = (
    "decode_bandwidth_efficiency",
    "prefill_compute_efficiency",
    "matmul_efficiency_",
    "memory_bandwidth_efficiency",
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    fingerprint TEXT NOT NULL,
    started_at TEXT NOT NULL,
    quick INTEGER NOT NULL,
    report_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS factors (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    fingerprint TEXT NOT NULL,
    accelerator_id TEXT NOT NULL,
    key TEXT NOT NULL,
    value REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS factors_lookup ON factors (fingerprint, accelerator_id, run_id);
"""


def data_dir() -> Path:
    override = os.environ.get(DATA_DIR_ENV)
    if override:
        return Path(override)
    from platformdirs import user_data_dir

    return Path(user_data_dir("rigwise", appauthor=False))


def db_path() -> Path:
    return data_dir() / DB_NAME


@contextmanager
def _connect() -> Iterator[sqlite3.Connection]:
    path = db_path()
    hint = f"Move it aside, or set {DATA_DIR_ENV} to another folder."
    connection = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(path)
        connection.executescript(_SCHEMA)
    except (OSError, sqlite3.Error) as exc:  # a damaged store is the machine's, not a bug (70)
        if connection is not None:
            connection.close()
        raise InputError(
            f"Cannot open the calibration store {str(path)!r}: {exc}.", hint=hint
        ) from None
    try:
        yield connection
        connection.commit()
    finally:
        connection.close()


@contextmanager
def stored_rows() -> Iterator[None]:
    """Around reading what the store holds: a row changed by hand or by another program is the
    machine's, not a bug (a 'started_at' of 'garbage' or a report that is no JSON was exit 70)."""
    try:
        yield
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        detail = f"{type(exc).__name__}: {exc}"[:200]
        raise InputError(
            f"The calibration store {str(db_path())!r} has a damaged row ({detail}).",
            hint=f"Move it aside, or set {DATA_DIR_ENV} to another folder; then run `rigwise "
            "bench` again.",
        ) from None


def fingerprint(report: Any) -> str:
    """A stable id of this machine's hardware: host, CPU, RAM (GiB), GPUs (name + uuid).

    ``report`` is a ``ProbeReport``; a change of GPU, CPU or RAM gives a new fingerprint, so
    old calibrations stop applying."""
    gpus = sorted(f"{g.name}|{g.uuid}" for g in report.gpus)
    parts = [
        platform.node(),
        report.cpu.model,
        str(report.cpu.threads),
        str(round(report.memory.total_bytes / GiB)),
        *gpus,
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def current_fingerprint() -> str:
    from rigwise.probe import probe

    return fingerprint(probe())


def is_calibration_key(key: str) -> bool:
    return any(
        key == p or (p.endswith("_") and key.startswith(p)) for p in CALIBRATION_KEYS_PREFIXES
    )


def bounds_problem(key: str, value: float) -> str | None:
    """Why ``value`` cannot be a calibration of ``key`` (None: it can)."""
    low, high = EFFICIENCY_BOUNDS
    if low < value <= high:
        return None
    return (
        f"{key} = {value:.3g} is outside ({low}, {high}]: the catalog peak it is a fraction of "
        "is not this machine's (a virtual machine, a partial CPU/GPU match, or a failed run)"
    )


def save_run(
    fingerprint_id: str,
    started_at: str,
    quick: bool,
    report_json: Mapping[str, Any],
    factors: Mapping[str, Mapping[str, float]],
) -> int:
    """Store one run and its factors per accelerator; returns the run id."""
    with _connect() as connection:
        cursor = connection.execute(
            "INSERT INTO runs (fingerprint, started_at, quick, report_json) VALUES (?, ?, ?, ?)",
            (fingerprint_id, started_at, int(quick), json.dumps(report_json)),
        )
        run_id = int(cursor.lastrowid or 0)
        connection.executemany(
            "INSERT INTO factors VALUES (?, ?, ?, ?, ?)",
            [
                (run_id, fingerprint_id, accelerator, key, float(value))
                for accelerator, values in factors.items()
                for key, value in values.items()
                if is_calibration_key(key) and bounds_problem(key, float(value)) is None
            ],
        )
    return run_id


def load_calibration(accelerator_id: str, fingerprint_id: str | None = None) -> dict[str, float]:
    """This machine's latest measured factor per key for ``accelerator_id`` ({} if never run).

    Each key comes from the most recent run that measured it, so a ``--quick`` run that skips
    the LLM benchmark does not erase an earlier decode calibration."""
    if not db_path().exists():
        return {}
    fingerprint_id = fingerprint_id or current_fingerprint()
    with _connect() as connection:
        rows = connection.execute(
            "SELECT key, value FROM factors WHERE fingerprint = ? AND accelerator_id = ? "
            "ORDER BY run_id ASC",
            (fingerprint_id, accelerator_id),
        ).fetchall()
    # rows stored before the bounds existed are ignored, never applied
    with stored_rows():
        return {
            key: float(value) for key, value in rows if bounds_problem(key, float(value)) is None
        }


@dataclass(frozen=True)
class CalibrationSource(JsonObject):
    """Which stored run a ``--calibrated`` plan uses, and how old it is."""

    run_id: int
    started_at: str
    quick: bool
    age_s: float
    keys: tuple[str, ...]
    origin: str  # "bench" or "import: <file>"

    def describe(self) -> str:
        hours = self.age_s / 3600
        age = f"{hours:.1f} h" if hours < 48 else f"{hours / 24:.0f} days"
        quick = " (--quick)" if self.quick else ""
        return (
            f"calibration from run {self.run_id}{quick}, {self.origin}, {self.started_at} "
            f"({age} old): {', '.join(self.keys)}"
        )


def calibration_source(
    accelerator_id: str, fingerprint_id: str | None = None
) -> CalibrationSource | None:
    """The newest run that stored a factor for ``accelerator_id`` on this machine."""
    if not db_path().exists():
        return None
    from datetime import UTC, datetime

    fingerprint_id = fingerprint_id or current_fingerprint()
    with _connect() as connection:
        row = connection.execute(
            "SELECT r.id, r.started_at, r.quick, r.report_json FROM runs r JOIN factors f "
            "ON f.run_id = r.id WHERE f.fingerprint = ? AND f.accelerator_id = ? "
            "ORDER BY r.id DESC LIMIT 1",
            (fingerprint_id, accelerator_id),
        ).fetchone()
        if row is None:
            return None
        keys = connection.execute(
            "SELECT key FROM factors WHERE run_id = ? AND accelerator_id = ?",
            (row[0], accelerator_id),
        ).fetchall()
    with stored_rows():
        started = datetime.fromisoformat(str(row[1]))
        age = (datetime.now(UTC) - started).total_seconds()
        origin = json.loads(row[3]).get("imported_from")
    return CalibrationSource(
        int(row[0]),
        str(row[1]),
        bool(row[2]),
        age,
        tuple(sorted(k for (k,) in keys)),
        f"import: {origin}" if origin else "bench",
    )


@dataclass(frozen=True)
class HistoryEntry(JsonObject):
    run_id: int
    started_at: str
    quick: bool
    values: dict[str, float]  # "<name>@<device>" -> value
    units: dict[str, str]


def history(fingerprint_id: str | None = None, limit: int = 20) -> tuple[HistoryEntry, ...]:
    """This machine's runs, oldest first (the newest ``limit``)."""
    if not db_path().exists():
        return ()
    fingerprint_id = fingerprint_id or current_fingerprint()
    with _connect() as connection:
        rows = connection.execute(
            "SELECT id, started_at, quick, report_json FROM runs WHERE fingerprint = ? "
            "ORDER BY id DESC LIMIT ?",
            (fingerprint_id, limit),
        ).fetchall()
    entries = []
    for run_id, started_at, quick, report_json in reversed(rows):
        with stored_rows():
            measurements = json.loads(report_json).get("measurements", [])
            values = {f"{m['name']}@{m['device']}": float(m["value"]) for m in measurements}
            units = {f"{m['name']}@{m['device']}": str(m["unit"]) for m in measurements}
        entries.append(HistoryEntry(int(run_id), str(started_at), bool(quick), values, units))
    return tuple(entries)
