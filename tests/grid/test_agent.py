"""The agent's facts: from rigwise.probe/bench on a fake machine, NVLink domains from topology."""

from __future__ import annotations

from rigwise.grid.measure import ProbeFacts, nvlink_domains
from rigwise.probe import FakeBackend


def test_nvlink_domains_follow_nv_links_transitively() -> None:
    topology = (
        ("X", "NV4", "PHB", "SYS"),
        ("NV4", "X", "NV4", "SYS"),
        ("PHB", "NV4", "X", "SYS"),
        ("SYS", "SYS", "SYS", "X"),
    )
    domains = nvlink_domains(topology)
    assert domains[0] == domains[1] == domains[2] is not None
    assert domains[3] is None


def test_probe_facts_on_a_fake_two_gpu_machine() -> None:
    machine = {
        "cpu": {"cores": 32, "threads": 64, "numa_nodes": 2},
        "memory": "256GB",
        "gpus": [
            {"name": "NVIDIA GeForce RTX 3090", "memory": "24GB"},
            {"name": "NVIDIA GeForce RTX 3090", "memory": "24GB"},
        ],
        "topology": [["X", "NV4"], ["NV4", "X"]],
    }
    facts = ProbeFacts(site="lab", backend=FakeBackend(machine)).facts()
    assert facts.cpu_cores == 32 and facts.numa_nodes == 2
    assert facts.memory_bytes == 256e9
    assert [gpu.memory_bytes for gpu in facts.gpus] == [24e9, 24e9]
    assert facts.gpus[0].nvlink_domain == facts.gpus[1].nvlink_domain is not None
    assert facts.measured_flops > 0 and facts.measured_memory_bandwidth_bytes_per_s > 0
    assert facts.site == "lab"
