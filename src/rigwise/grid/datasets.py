"""Where the grid's datasets live now: the stores reachable at this moment (storage-role nodes
whose Ray worker is alive, the coordinator's ``--store`` directories, its own disk), and the
pass that tops up under-replicated datasets when more stores become reachable."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.orm import Session

from rigwise.errors import GridError
from rigwise.grid.db import DatasetRow, NodeRow
from rigwise.grid.storage import ChunkStores, Manifest, Store, local_stores

if TYPE_CHECKING:
    from rigwise.grid.config import GridConfig
    from rigwise.grid.service import Engine

NODE_STORE_PREFIX = "node:"


def node_store_name(node_id: str) -> str:
    return f"{NODE_STORE_PREFIX}{node_id}"


def reachable_stores(session: Session, config: GridConfig, engine: Engine | None) -> ChunkStores:
    """Storage nodes first (admitted, Ray worker alive), then the coordinator's directories."""
    nodes: list[Store] = []
    if engine is not None:
        alive = engine.alive_nodes()
        rows = session.scalars(
            select(NodeRow)
            .where(NodeRow.state == "admitted", NodeRow.storage_role.is_(True))
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
