"""Content-addressed, chunked, replicated datasets, verified on every read.

A dataset is cut into fixed-size chunks; each chunk is stored under its SHA-256 in ``replicas``
of the grid's stores. A store is a directory somewhere: on a member node given the storage role
(``rigwise grid join --storage DIR``, reached through Ray tasks on that node), a directory the
coordinator mounts (``rigwise grid up --store DIR``, e.g. a NAS), or the coordinator's own
disk; they are filled in that order. A manifest (name, size, whole-file SHA-256, chunk hashes,
which stores hold them, how many copies are wanted) goes to the coordinator's database.

Reads re-hash every chunk: a corrupted or missing replica is skipped (and repaired from a good
one); if no good replica remains the read fails naming the chunk. A dataset stored while fewer
stores were reachable than copies wanted is under-replicated, and ``replicate`` tops it up once
more stores are there (HDFS does the same for under-replicated blocks).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from rigwise.errors import GridError, InputError

DEFAULT_CHUNK_BYTES = 1 << 20  # 1 MiB
COORDINATOR_STORE = "coordinator"


class Store(Protocol):
    """Somewhere chunks live; reads and writes go in batches (one Ray task for a node)."""

    name: str

    def read(self, digests: list[str]) -> dict[str, bytes | None]: ...
    def write(self, chunks: dict[str, bytes]) -> None: ...


class DirectoryStore:
    """Chunks as files ``<directory>/<aa>/<sha256>`` (a local disk or a mounted NAS)."""

    def __init__(self, name: str, directory: Path) -> None:
        self.name, self.directory = name, directory

    def chunk_path(self, digest: str) -> Path:
        return self.directory / digest[:2] / digest

    def read(self, digests: list[str]) -> dict[str, bytes | None]:
        found: dict[str, bytes | None] = {}
        for digest in digests:
            path = self.chunk_path(digest)
            found[digest] = path.read_bytes() if path.exists() else None
        return found

    def write(self, chunks: dict[str, bytes]) -> None:
        for digest, chunk in chunks.items():
            path = self.chunk_path(digest)
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_suffix(".part")
            temporary.write_bytes(chunk)
            os.replace(temporary, path)  # atomic: a reader never sees half a chunk


@dataclass(frozen=True)
class Manifest:
    name: str
    size_bytes: int
    sha256: str
    chunk_bytes: int
    chunks: tuple[str, ...]
    stores: tuple[str, ...]  # store names holding every chunk
    meta: dict[str, Any] = field(default_factory=dict)
    replicas: int = 0  # copies wanted (0: as many as ``stores``)

    @property
    def wanted(self) -> int:
        return self.replicas or len(self.stores)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["chunks"] = list(self.chunks)
        data["stores"] = list(self.stores)
        data["replicas"] = self.wanted
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Manifest:
        return cls(
            name=data["name"],
            size_bytes=int(data["size_bytes"]),
            sha256=data["sha256"],
            chunk_bytes=int(data["chunk_bytes"]),
            chunks=tuple(data["chunks"]),
            stores=tuple(data["stores"]),
            meta=dict(data.get("meta", {})),
            replicas=int(data.get("replicas", 0)),
        )


@dataclass(frozen=True)
class ReadReport:
    data: bytes
    repaired: tuple[str, ...]  # "store:chunk" replicas found corrupt or missing and rewritten


def _cut(data: bytes, chunk_bytes: int) -> list[tuple[str, bytes]]:
    """(SHA-256, chunk) for each chunk of ``data``, in order (an empty dataset is one chunk)."""
    pieces = [
        data[start : start + chunk_bytes] for start in range(0, max(len(data), 1), chunk_bytes)
    ]
    return [(hashlib.sha256(piece).hexdigest(), piece) for piece in pieces]


class ChunkStores:
    """The stores reachable now, in the order replicas go to them."""

    def __init__(self, stores: list[Store]) -> None:
        if not stores:
            raise InputError("A grid needs at least one store.", hint="Check the data dir.")
        self.stores = {store.name: store for store in stores}

    def put(
        self,
        name: str,
        data: bytes,
        replicas: int,
        chunk_bytes: int = DEFAULT_CHUNK_BYTES,
        meta: dict[str, Any] | None = None,
    ) -> Manifest:
        """Write ``data`` to the first ``replicas`` stores that take it (fewer when fewer are
        reachable: the manifest then says how many copies are still wanted)."""
        if replicas < 1:
            raise InputError(f"replicas must be at least 1, got {replicas}.", hint="Use 2.")
        pieces = _cut(data, chunk_bytes)
        holders = self._write_to(list(self.stores), dict(pieces), replicas)
        whole = hashlib.sha256(data).hexdigest()
        return Manifest(
            name, len(data), whole, chunk_bytes, tuple(digest for digest, _ in pieces), holders,
            meta or {}, replicas,
        )  # fmt: skip

    def _write_to(self, names: list[str], chunks: dict[str, bytes], count: int) -> tuple[str, ...]:
        written: list[str] = []
        failures: list[str] = []
        for store_name in names:
            if len(written) == count:
                break
            try:
                self.stores[store_name].write(chunks)
                written.append(store_name)
            except (GridError, OSError) as exc:  # an unreachable node: the next store
                failures.append(f"{store_name}: {exc}")
        if not written:
            raise GridError(
                "No store took the data: " + "; ".join(failures),
                hint="Check the storage nodes (rigwise grid nodes) and the coordinator's disk.",
            )
        return tuple(written)

    def live(self, manifest: Manifest) -> list[str]:
        """The manifest's stores reachable now (a lost storage node's are not)."""
        return [name for name in manifest.stores if name in self.stores]

    def get(self, manifest: Manifest) -> ReadReport:
        wanted = list(dict.fromkeys(manifest.chunks))
        good: dict[str, bytes] = {}
        damaged: dict[str, list[str]] = {}  # store -> chunks it lacks or holds corrupt
        for store_name in self.live(manifest):
            missing = [digest for digest in wanted if digest not in good]
            if not missing:
                break
            found = self.stores[store_name].read(missing)
            for digest in missing:
                chunk = found.get(digest)
                if chunk is not None and hashlib.sha256(chunk).hexdigest() == digest:
                    good[digest] = chunk
                else:
                    damaged.setdefault(store_name, []).append(digest)
        lost = [digest for digest in wanted if digest not in good]
        if lost:
            raise GridError(
                f"Dataset {manifest.name!r}: chunk {lost[0]} is corrupted or missing in every "
                f"reachable replica ({', '.join(manifest.stores)}).",
                hint="Put the dataset again from a good copy, or bring its storage nodes back.",
            )
        repaired = self._repair(damaged, good)
        data = b"".join(good[digest] for digest in manifest.chunks)
        if hashlib.sha256(data).hexdigest() != manifest.sha256:
            raise GridError(
                f"Dataset {manifest.name!r} does not match its recorded SHA-256.",
                hint="Put the dataset again from a good copy.",
            )
        return ReadReport(data, repaired)

    def _repair(self, damaged: dict[str, list[str]], good: dict[str, bytes]) -> tuple[str, ...]:
        repaired: list[str] = []
        for store_name, digests in damaged.items():
            try:
                self.stores[store_name].write({digest: good[digest] for digest in digests})
            except (GridError, OSError):
                continue  # still damaged; the next read tries again
            repaired.extend(f"{store_name}:{digest}" for digest in digests)
        return tuple(repaired)

    def replicate(self, manifest: Manifest) -> Manifest | None:
        """A copy of an under-replicated dataset on more of the reachable stores (the new
        manifest), or None when it has its copies or no other store is reachable."""
        live = self.live(manifest)
        spare = [name for name in self.stores if name not in manifest.stores]
        if len(live) >= manifest.wanted or not spare:
            return None
        data = self.get(manifest).data
        added = self._write_to(
            spare, dict(_cut(data, manifest.chunk_bytes)), manifest.wanted - len(live)
        )
        return replace(manifest, stores=(*manifest.stores, *added))


def local_stores(storage_dir: Path, store_dirs: tuple[Path, ...]) -> list[Store]:
    """The coordinator's stores: its ``--store`` directories, then its own disk."""
    mounted: list[Store] = [
        DirectoryStore(f"store-{index}", path) for index, path in enumerate(store_dirs)
    ]
    return [*mounted, DirectoryStore(COORDINATOR_STORE, storage_dir / COORDINATOR_STORE)]
