"""What the scheduler needs from the world, as protocols, and the grid's state names.

``Engine`` is the scheduler's hands on a cluster (``ray_adapter.RayEngine`` on Ray; tests use
an in-process one). ``GridState`` is what one scheduling pass reads from the service (the
database, the engine, the rules); ``service.GridService`` satisfies it. Both live here so the
scheduler, node and dataset passes depend on these names, not on the service that calls them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from sqlalchemy.orm import Session, sessionmaker

    from rigwise.grid.config import GridConfig
    from rigwise.grid.credits import CreditRule
    from rigwise.grid.placement import NodeView, PlacementPlan
    from rigwise.grid.policy import MachineFacts, Policy
    from rigwise.grid.storage import ChunkStores, Manifest, Store
    from rigwise.grid.verify import VerificationRule

# node states: admitted on its claim and then measured by the grid (verify.py)
VERIFYING = "verifying"
ADMITTED = "admitted"
REJECTED = "rejected"
LOST = "lost"  # admitted, but its Ray worker is gone
MAX_ATTEMPTS = 5  # launches of one job before it fails for good


class Engine(Protocol):
    running: dict[str, Any]

    def launch(
        self,
        job_id: str,
        kind: str,
        app: dict[str, Any],
        requires: list[str],
        env: dict[str, str],
        plan: PlacementPlan,
        inputs: dict[str, bytes],
    ) -> None: ...
    def placed(self, job_id: str) -> bool: ...
    def node_of(self, job_id: str) -> str | None: ...
    def poll(self, job_id: str) -> tuple[str, Any]: ...
    def release(self, job_id: str, cancel: bool = False) -> None: ...
    def alive_nodes(self) -> dict[str, bool]: ...
    def verify(self, node_id: str, cpus: float, gpus: int, claimed: MachineFacts) -> None: ...
    def verification(self, node_id: str) -> tuple[str, Any]: ...
    def node_store(self, name: str, node_id: str, directory: str) -> Store: ...


class GridState(Protocol):
    """What a scheduling pass reads and writes (``GridService`` is one)."""

    config: GridConfig
    sessions: sessionmaker[Session]
    engine: Engine | None
    policy: Policy
    verification_rule: VerificationRule
    credit_rule: CreditRule
    held_out_fraction: float
    next_replication: float
    launched: set[str]  # jobs this coordinator launched or took over after a restart
    # outcomes (status, value, node) of jobs the engine released in a pass not yet committed
    released: dict[str, tuple[str, Any, str | None]]
    ledger_key: bytes

    def stores(self, session: Session) -> ChunkStores: ...
    def manifest(self, session: Session, name: str) -> Manifest | None: ...
    def node_views(self, session: Session) -> list[NodeView]: ...
