"""One owner per pump: a controller claims its pumps in the store's lease table before it runs.

A second controller on the same store (the same rig) is refused while the first is alive; the
claim of a controller that died (its process is gone) is taken over and logged, so a restart
after a crash is never blocked by its own stale claim.
"""

from __future__ import annotations

import os
import sqlite3

from rigwise.errors import InputError
from rigwise.oi.store import Store


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def claim_pumps(store: Store, pumps: list[str], t_s: float, pid: int | None = None) -> None:
    owner = f"controller:{pid or os.getpid()}"
    rows = [(f"pump:{name}", 0, owner) for name in pumps]
    store.db.execute("BEGIN IMMEDIATE")
    try:
        held = store.db.execute(
            "SELECT mea, experiment_id FROM leases WHERE mea LIKE 'pump:%'"
        ).fetchall()
        for mea, holder in held:
            holder_pid = int(holder.split(":")[1])
            if holder != owner and _alive(holder_pid):
                raise InputError(
                    f"{mea} is owned by a running controller (pid {holder_pid}).",
                    hint="Stop that `rigwise oi run` first: one owner per pump.",
                )
        store.db.execute("DELETE FROM leases WHERE mea LIKE 'pump:%'")
        store.db.executemany("INSERT INTO leases VALUES (?, ?, ?)", rows)
        store.db.execute("COMMIT")
    except (InputError, sqlite3.Error):
        store.db.execute("ROLLBACK")
        raise
    if held and any(h[1] != owner for h in held):
        store.append("pumps_taken_over", t_s, {"from": sorted({h[1] for h in held}), "to": owner})


def release_pumps(store: Store, pid: int | None = None) -> None:
    store.db.execute(
        "DELETE FROM leases WHERE mea LIKE 'pump:%' AND experiment_id = ?",
        (f"controller:{pid or os.getpid()}",),
    )
