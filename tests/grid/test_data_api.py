"""Datasets through the API: round trip, corruption detected on read."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from rigwise.grid.config import make_config
from rigwise.grid.coordinator import create_app
from rigwise.grid.service import GridService


def test_corrupted_chunk_is_detected_on_read(tmp_path: Path) -> None:
    nas = tmp_path / "nas"
    nas.mkdir()
    service = GridService(make_config(tmp_path / "grid", replicas=2, store_dirs=(nas,)))
    client = TestClient(create_app(service, scheduler_interval=None))
    admin = {"Authorization": f"Bearer {service.admin_token}"}
    data = bytes(range(256)) * 8192  # 2 MiB -> 2 chunks
    manifest = client.put("/api/data/blob", content=data, headers=admin).json()
    assert len(manifest["chunks"]) == 2
    chunk = manifest["chunks"][1]
    assert client.get("/api/data/blob", headers=admin).content == data
    assert manifest["stores"] == ["store-0", "coordinator"]
    paths = [
        nas / chunk[:2] / chunk,
        tmp_path / "grid" / "storage" / "coordinator" / chunk[:2] / chunk,
    ]
    paths[0].write_bytes(b"bit rot")
    assert client.get("/api/data/blob", headers=admin).content == data  # repaired from replica 1
    assert paths[0].read_bytes() != b"bit rot"
    for path in paths:
        path.write_bytes(b"bit rot")
    response = client.get("/api/data/blob", headers=admin)
    assert response.status_code == 409
    assert chunk in response.json()["error"]
    listed = client.get("/api/data", headers=admin).json()
    assert listed[0]["name"] == "blob" and listed[0]["chunks"] == 2
