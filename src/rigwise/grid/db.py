"""Durable grid state: SQLAlchemy 2 models over SQLite (default) or PostgreSQL.

Every state change is committed before the API answers, so a coordinator killed at any point
restarts from the same file with no job or ledger entry lost. The ledger is append-only: the ORM
refuses updates and deletes, on SQLite/PostgreSQL a trigger refuses them in SQL as well, and
each entry carries a keyed hash of itself and of the entry before it (``grid.ledger``), so an
edit made around both (a dropped trigger, a direct INSERT) is detected when the ledger is read.
The SQLite file is created readable by its owner only (0600); its WAL files inherit that mode.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from sqlalchemy import (
    DDL,
    JSON,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    create_engine,
    event,
    inspect,
    text,
)
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, sessionmaker

from rigwise.errors import GridError, InputError


class Base(DeclarativeBase):
    pass


def _now() -> float:
    return time.time()


class NodeRow(Base):
    __tablename__ = "nodes"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    owner: Mapped[str] = mapped_column(String(200))
    state: Mapped[str] = mapped_column(String(16))  # verifying / admitted / rejected / lost
    reasons: Mapped[list[str]] = mapped_column(JSON, default=list)
    facts: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    resources: Mapped[dict[str, float]] = mapped_column(JSON, default=dict)
    labels: Mapped[dict[str, str]] = mapped_column(JSON, default=dict)
    measured_flops: Mapped[float] = mapped_column(Float, default=0.0)
    storage_role: Mapped[bool] = mapped_column(default=False)
    # the grid's own measurement of the node: claimed and measured facts, checks, verdict
    verification: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    joined_at: Mapped[float] = mapped_column(Float, default=_now)


class TokenRow(Base):
    __tablename__ = "tokens"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    account: Mapped[str] = mapped_column(String(200))
    role: Mapped[str] = mapped_column(String(16))  # admin / node / join
    node_id: Mapped[str | None] = mapped_column(String(32), nullable=True)


class JobRow(Base):
    __tablename__ = "jobs"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    kind: Mapped[str] = mapped_column(String(16))
    state: Mapped[str] = mapped_column(String(16))
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    submitter: Mapped[str] = mapped_column(String(200))
    node: Mapped[str | None] = mapped_column(String(32), nullable=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    reason: Mapped[str] = mapped_column(Text, default="")
    result: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    predicted_seconds: Mapped[float | None] = mapped_column(Float, nullable=True)
    created_at: Mapped[float] = mapped_column(Float, default=_now)
    started_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    finished_at: Mapped[float | None] = mapped_column(Float, nullable=True)


class JobEventRow(Base):
    __tablename__ = "job_events"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"))
    time: Mapped[float] = mapped_column(Float, default=_now)
    message: Mapped[str] = mapped_column(Text)


class LedgerRow(Base):
    __tablename__ = "ledger"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    time: Mapped[float] = mapped_column(Float, default=_now)
    account: Mapped[str] = mapped_column(String(200))
    amount: Mapped[float] = mapped_column(Float)  # credits; + earned, - spent
    kind: Mapped[str] = mapped_column(String(16))  # earn / spend
    job_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    node_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    detail: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # the hash chain (grid/ledger.py): the previous entry's hash, and this entry's
    prev_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    entry_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)


class TemplateRow(Base):
    __tablename__ = "templates"
    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    owner: Mapped[str] = mapped_column(String(200), default="admin")  # who may replace it


class DatasetRow(Base):
    __tablename__ = "datasets"
    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    manifest: Mapped[dict[str, Any]] = mapped_column(JSON)
    owner: Mapped[str] = mapped_column(String(200), default="admin")  # who may replace it
    created_at: Mapped[float] = mapped_column(Float, default=_now)


class ModelRow(Base):
    __tablename__ = "models"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    owner: Mapped[str] = mapped_column(String(200))
    artifact: Mapped[str] = mapped_column(String(200))  # dataset name holding the weights
    lineage: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[float] = mapped_column(Float, default=_now)


class EvaluationRow(Base):
    __tablename__ = "evaluations"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    model_id: Mapped[str] = mapped_column(ForeignKey("models.id"))
    metric: Mapped[str] = mapped_column(String(64))
    value: Mapped[float] = mapped_column(Float)
    dataset: Mapped[str] = mapped_column(String(200))
    job_id: Mapped[str] = mapped_column(String(32))
    created_at: Mapped[float] = mapped_column(Float, default=_now)


def add_event(session: Session, job_id: str, message: str) -> None:
    """One line of a job's history (``grid logs``)."""
    session.add(JobEventRow(job_id=job_id, message=message))


@event.listens_for(LedgerRow, "before_update")
def _refuse_ledger_update(*_: Any) -> None:
    raise GridError("The credit ledger is append-only; entries cannot be changed.")


@event.listens_for(LedgerRow, "before_delete")
def _refuse_ledger_delete(*_: Any) -> None:
    raise GridError("The credit ledger is append-only; entries cannot be deleted.")


_SQLITE_TRIGGERS = [
    "CREATE TRIGGER IF NOT EXISTS ledger_no_update BEFORE UPDATE ON ledger "
    "BEGIN SELECT RAISE(ABORT, 'ledger is append-only'); END",
    "CREATE TRIGGER IF NOT EXISTS ledger_no_delete BEFORE DELETE ON ledger "
    "BEGIN SELECT RAISE(ABORT, 'ledger is append-only'); END",
]
_PG_TRIGGER = (
    "CREATE OR REPLACE FUNCTION ledger_append_only() RETURNS trigger AS $$ BEGIN "
    "RAISE EXCEPTION 'ledger is append-only'; END; $$ LANGUAGE plpgsql; "
    "DROP TRIGGER IF EXISTS ledger_append_only ON ledger; "
    "CREATE TRIGGER ledger_append_only BEFORE UPDATE OR DELETE ON ledger "
    "FOR EACH ROW EXECUTE FUNCTION ledger_append_only();"
)
for _statement in _SQLITE_TRIGGERS:
    event.listen(LedgerRow.__table__, "after_create", DDL(_statement).execute_if(dialect="sqlite"))
event.listen(LedgerRow.__table__, "after_create", DDL(_PG_TRIGGER).execute_if(dialect="postgresql"))


def _sqlite_wal(connection: Any, _: Any) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.close()


def _private_sqlite_file(url: str) -> None:
    """Create (or narrow) the SQLite file as 0600 before SQLite opens it."""
    path = url.split(":///", 1)[1] if ":///" in url else ""
    if not path or path.startswith(":memory:"):
        return
    file = Path(path)
    file.parent.mkdir(parents=True, exist_ok=True)
    os.close(os.open(file, os.O_WRONLY | os.O_CREAT, 0o600))
    for existing in (file, Path(f"{file}-wal"), Path(f"{file}-shm")):
        if existing.exists():
            existing.chmod(0o600)


def _add_missing_columns(engine: Engine) -> None:
    """Columns added since a database was created (owners, the ledger's hashes): added empty,
    so an older grid's file opens (its unchained ledger entries are reported, not trusted)."""
    present = inspect(engine)
    with engine.begin() as connection:
        for table in Base.metadata.sorted_tables:
            have = {column["name"] for column in present.get_columns(table.name)}
            for column in table.columns:
                if column.name not in have:
                    kind = column.type.compile(engine.dialect)
                    connection.execute(
                        text(f"ALTER TABLE {table.name} ADD COLUMN {column.name} {kind}")
                    )


def open_database(url: str) -> sessionmaker[Session]:
    """Create the tables if missing and return a session factory."""
    sqlite = url.startswith("sqlite")
    if sqlite:
        _private_sqlite_file(url)
    # the scheduler thread and API requests write concurrently: wait for the lock, and let
    # readers proceed during a write (write-ahead log)
    try:
        engine: Engine = create_engine(url, connect_args={"timeout": 30} if sqlite else {})
        if sqlite:
            event.listen(engine, "connect", _sqlite_wal)
        Base.metadata.create_all(engine)
        _add_missing_columns(engine)
    except (ImportError, SQLAlchemyError) as exc:  # the machine's, not a bug (was exit 70)
        reason = str(getattr(exc, "orig", None) or exc).splitlines()[0][:200]
        shown = url if "@" not in url else f"{url.split('://')[0]}://...@{url.split('@')[-1]}"
        raise InputError(  # the URL without its user and password
            f"Cannot open the grid database {shown!r}: {reason}.",
            hint="Check --db (postgresql needs the psycopg package), or move a damaged "
            "SQLite file aside.",
        ) from None
    return sessionmaker(engine, expire_on_commit=False)
