"""The agent a machine runs to join a grid: find the machine's facts, benchmark it, ask to be
admitted, start its Ray worker with the labels the grid gave it, and wait while the grid
measures the machine itself on that worker (``rigwise.grid.verify``) for the verdict.

Facts come from a ``FactsProvider``: ``measure.ProbeFacts`` (probe + quick benchmark; the grid
runs the same one on the node); the network figure is measured by downloading a blob from the
coordinator. Tests use ``StaticFacts``.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlparse

from rigwise.grid.client import GridClient
from rigwise.grid.config import ray_network_env
from rigwise.grid.engine import VERIFYING
from rigwise.grid.policy import MachineFacts

SPEEDTEST_BYTES = 8_000_000
CREDENTIAL_FILE = Path("~/.config/rigwise/grid.json")


class FactsProvider(Protocol):
    def facts(self) -> MachineFacts: ...


class StaticFacts:
    """Facts given up front (tests, or a machine described by hand)."""

    def __init__(self, facts: MachineFacts) -> None:
        self._facts = facts

    def facts(self) -> MachineFacts:
        return self._facts


def measure_network(client: GridClient, size_bytes: int = SPEEDTEST_BYTES) -> float:
    """Bytes/s of a download from the coordinator (what the grid will see)."""
    started = time.perf_counter()
    received = len(client.speedtest(size_bytes))
    return received / max(time.perf_counter() - started, 1e-9)


def route_ip(url: str) -> str:
    """This machine's address on the route to the coordinator (Ray binds to it)."""
    host = urlparse(url).hostname or "127.0.0.1"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect((host, 9))  # no packet is sent for a UDP connect
        return str(probe.getsockname()[0])


def save_credential(answer: dict[str, Any], url: str, path: Path = CREDENTIAL_FILE) -> Path:
    from rigwise.grid.auth import write_secret

    target = path.expanduser()
    write_secret(
        target, json.dumps({"url": url, "node": answer["id"], "token": answer["credential"]})
    )
    return target


StartRay = Callable[[dict[str, Any], MachineFacts], "int | None"]


def start_ray_worker(url: str) -> StartRay:
    """This machine's Ray worker for the grid at ``url``: ``ray start --address`` on a network
    address; on a loopback grid (coordinator on this machine), a member node started the way
    Ray's own test cluster adds nodes (``ray_adapter.member``). Returns its process group."""

    def start(answer: dict[str, Any], facts: MachineFacts) -> int:
        from rigwise.grid import ray_adapter
        from rigwise.grid.placement import node_labels

        node_ip = route_ip(url)
        launch = ray_adapter.start_member if ray_network_env(node_ip) else ray_adapter.start_worker
        return launch(
            answer["ray_address"],
            answer["ray_token"],
            node_ip,
            facts.cpu_cores,
            len(facts.gpus),
            node_labels(answer["id"], answer["labels"], {}),
            answer.get("ray_resources", {}),
        )

    return start


StopRay = Callable[[dict[str, Any]], None]
POLL_SECONDS = 1.0


def await_verdict(client: GridClient, node_id: str, timeout_s: float) -> dict[str, Any]:
    """Poll the node's record (with its own credential) until the grid has measured it."""
    deadline = time.monotonic() + timeout_s
    while True:
        record = client.node(node_id)
        if record["state"] != VERIFYING or time.monotonic() > deadline:
            return record
        time.sleep(POLL_SECONDS)


def stop_ray_worker(answer: dict[str, Any]) -> None:
    """Stop the Ray worker this agent started (the grid rejected the machine), and only it."""
    from rigwise.grid import ray_adapter

    if answer.get("ray_group"):
        ray_adapter.stop_group(int(answer["ray_group"]))


def join(
    client: GridClient,
    provider: FactsProvider,
    name: str,
    owner: str,
    labels: dict[str, str],
    start_ray: StartRay | None,
    measure_link: bool = True,
    stop_ray: StopRay | None = None,
) -> dict[str, Any]:
    """Probe, benchmark, ask. A machine that passes on its claim starts its Ray worker, and the
    grid measures it there itself; the answer is the grid's verdict on that measurement (a
    machine whose worker is not started stays ``verifying``). A rejected worker is stopped."""
    facts = provider.facts()
    if measure_link:
        facts = replace(facts, network_bytes_per_s=measure_network(client))
    answer = client.join(facts.to_dict(), name, owner, labels)
    if answer["state"] != VERIFYING or start_ray is None:
        return answer
    answer["ray_group"] = start_ray(answer, facts)
    own = GridClient(client.url, answer["credential"], transport=client.transport)
    record = await_verdict(own, answer["id"], float(answer.get("verify_timeout_s", 300)) + 30)
    if record["state"] == "rejected" and stop_ray is not None:
        stop_ray(answer)
    return {
        **answer,
        "state": record["state"],
        "reasons": record["reasons"],
        "verification": record.get("verification", {}),
    }
