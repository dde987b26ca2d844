"""The grid's datasets: who may put them (a new name is the caller's; an existing one only its
owner's or the admin's to replace; ``model:`` names are the grid's own), where they live now
(storage-role nodes whose Ray worker is alive, the coordinator's ``--store`` directories, its
own disk), and the pass that tops up under-replicated datasets when more stores come."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from rigwise.errors import GridError, InputError
from rigwise.grid import auth
from rigwise.grid.db import DatasetRow, NodeRow
from rigwise.grid.engine import ADMITTED
from rigwise.grid.storage import ChunkStores, Manifest, Store, local_stores

if TYPE_CHECKING:
    from rigwise.grid.config import GridConfig
    from rigwise.grid.engine import Engine

NODE_STORE_PREFIX = "node:"
MODEL_PREFIX = "model:"  # model weights the grid registered (leaderboard.register)


def node_store_name(node_id: str) -> str:
    return f"{NODE_STORE_PREFIX}{node_id}"


def reachable_stores(session: Session, config: GridConfig, engine: Engine | None) -> ChunkStores:
    """Storage nodes first (admitted, Ray worker alive), then the coordinator's directories."""
    nodes: list[Store] = []
    if engine is not None:
        alive = engine.alive_nodes()
        rows = session.scalars(
            select(NodeRow)
            .where(NodeRow.state == ADMITTED, NodeRow.storage_role.is_(True))
            .order_by(NodeRow.joined_at)
        ).all()
        nodes = [
            engine.node_store(node_store_name(row.id), row.id, str(row.facts["storage_path"]))
            for row in rows
            if alive.get(row.id)
        ]
    return ChunkStores([*nodes, *local_stores(config.storage_dir, config.store_dirs)])


def replicate_pass(session: Session, stores: ChunkStores) -> list[str]:
    """Copy every under-replicated dataset to more reachable stores; the names topped up."""
    topped: list[str] = []
    for row in session.scalars(select(DatasetRow)).all():
        manifest = Manifest.from_dict(row.manifest)
        try:
            grown = stores.replicate(manifest)
        except GridError:
            continue  # no good copy reachable now; a later pass tries again
        if grown is not None:
            row.manifest = grown.to_dict()
            topped.append(row.name)
    return topped


def manifest(session: Session, name: str) -> Manifest | None:
    row = session.get(DatasetRow, name)
    return Manifest.from_dict(row.manifest) if row else None


def put(
    session: Session,
    stores: ChunkStores,
    who: auth.Principal,
    name: str,
    data: bytes,
    replicas: int,
) -> dict[str, Any]:
    """Store ``data`` as dataset ``name`` for ``who`` (checked before a byte is written)."""
    if name.startswith(MODEL_PREFIX):
        raise auth.Forbidden(
            f"Dataset name {name!r} is reserved for models the grid registers.",
            hint="Pick a name that does not start with 'model:'.",
        )
    if not name.strip() or len(name) > 200:
        raise InputError(f"Dataset name {name!r} is empty or too long.", hint="Use 1-200 chars.")
    row = session.get(DatasetRow, name)
    if row is not None:
        auth.require_owner(who, row.owner or auth.ADMIN_ACCOUNT, f"Dataset {name!r}")
    stored = stores.put(name, data, replicas)
    if row is None:
        session.add(DatasetRow(name=name, manifest=stored.to_dict(), owner=who.account))
    else:
        row.manifest = stored.to_dict()
    return {**stored.to_dict(), "owner": who.account if row is None else row.owner}


def listing(session: Session) -> list[dict[str, Any]]:
    rows = session.scalars(select(DatasetRow).order_by(DatasetRow.name)).all()
    return [
        {k: v for k, v in r.manifest.items() if k != "chunks"}
        | {"chunks": len(r.manifest["chunks"]), "owner": r.owner or auth.ADMIN_ACCOUNT}
        for r in rows
    ]
