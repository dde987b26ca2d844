"""Chunked, content-addressed, replicated datasets: round trip, corruption, under-replication."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from rigwise.errors import GridError, InputError
from rigwise.grid.storage import ChunkStores, DirectoryStore, Manifest


def directories(tmp_path: Path, count: int = 3) -> list[DirectoryStore]:
    return [DirectoryStore(f"node-{i}", tmp_path / f"node-{i}") for i in range(count)]


class Unreachable:
    """A storage node that went away: reads find nothing, writes fail."""

    name = "gone"

    def read(self, digests: list[str]) -> dict[str, bytes | None]:
        return dict.fromkeys(digests)

    def write(self, chunks: dict[str, bytes]) -> None:
        raise GridError("store gone was not written: NodeDiedError")


def test_put_get_round_trip_is_content_addressed_and_replicated(tmp_path: Path) -> None:
    data = bytes(range(256)) * 100
    nodes = directories(tmp_path)
    stores = ChunkStores(list(nodes))
    manifest = stores.put("d", data, replicas=2, chunk_bytes=4096)
    assert manifest.sha256 == hashlib.sha256(data).hexdigest()
    assert len(manifest.chunks) == -(-len(data) // 4096)
    assert manifest.stores == ("node-0", "node-1") and manifest.wanted == 2
    for digest in manifest.chunks:
        assert nodes[0].chunk_path(digest).exists() and nodes[1].chunk_path(digest).exists()
        assert not nodes[2].chunk_path(digest).exists()
    assert stores.get(Manifest.from_dict(manifest.to_dict())).data == data


def test_corrupted_chunk_is_detected_and_repaired_from_a_good_replica(tmp_path: Path) -> None:
    nodes = directories(tmp_path)
    stores = ChunkStores(list(nodes))
    manifest = stores.put("d", b"a" * 10000, replicas=2, chunk_bytes=1000)
    bad = nodes[0].chunk_path(manifest.chunks[0])
    bad.write_bytes(b"b" * 1000)
    report = stores.get(manifest)
    assert report.data == b"a" * 10000
    assert report.repaired == (f"node-0:{manifest.chunks[0]}",)
    assert bad.read_bytes() == b"a" * 1000


def test_corruption_in_every_replica_fails_naming_the_chunk(tmp_path: Path) -> None:
    nodes = directories(tmp_path)
    stores = ChunkStores(list(nodes))
    manifest = stores.put("d", bytes(range(256)) * 4, replicas=2, chunk_bytes=64)
    for node in nodes[:2]:
        node.chunk_path(manifest.chunks[1]).write_bytes(b"tampered")
    with pytest.raises(GridError, match=manifest.chunks[1]):
        stores.get(manifest)


def test_an_unreachable_store_is_skipped_on_write_and_read(tmp_path: Path) -> None:
    nodes = directories(tmp_path, 2)
    manifest = ChunkStores([Unreachable(), *nodes]).put("d", b"x" * 500, replicas=2)
    assert manifest.stores == ("node-0", "node-1")
    with_gone = Manifest.from_dict({**manifest.to_dict(), "stores": ["gone", "node-1"]})
    assert ChunkStores([Unreachable(), *nodes]).get(with_gone).data == b"x" * 500


def test_fewer_stores_than_replicas_is_topped_up_when_one_appears(tmp_path: Path) -> None:
    nodes = directories(tmp_path, 2)
    manifest = ChunkStores(nodes[:1]).put("d", b"payload" * 100, replicas=2)
    assert manifest.stores == ("node-0",) and manifest.wanted == 2  # under-replicated
    assert ChunkStores(nodes[:1]).replicate(manifest) is None  # no other store yet
    grown = ChunkStores(nodes).replicate(manifest)
    assert grown is not None and grown.stores == ("node-0", "node-1")
    assert nodes[1].read(list(manifest.chunks))[manifest.chunks[0]] == b"payload" * 100
    assert ChunkStores(nodes).replicate(grown) is None  # has its copies


def test_zero_replicas_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="replicas"):
        ChunkStores(directories(tmp_path, 1)).put("d", b"x", replicas=0)


def test_explicit_store_directories_hold_the_replicas(tmp_path: Path) -> None:
    from rigwise.grid.config import make_config
    from rigwise.grid.service import GridService

    nas = tmp_path / "nas"
    nas.mkdir()
    service = GridService(make_config(tmp_path / "grid", replicas=2, store_dirs=(nas,)))
    from rigwise.grid.auth import ADMIN_ACCOUNT, ROLE_ADMIN, Principal

    manifest = service.data_put(Principal(ADMIN_ACCOUNT, ROLE_ADMIN), "d", b"payload")
    assert manifest["stores"] == ["store-0", "coordinator"]
    assert (nas / manifest["chunks"][0][:2] / manifest["chunks"][0]).read_bytes() == b"payload"
    with pytest.raises(InputError, match="not a directory"):
        make_config(tmp_path / "g2", store_dirs=(tmp_path / "missing",))
