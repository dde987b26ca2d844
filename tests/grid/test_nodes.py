"""What a node advertises: the grid's labels and custom Ray resources from its facts."""

from __future__ import annotations

from typing import Any

import pytest

from rigwise.grid.nodes import grid_labels, ray_resources


def test_labels_carry_gpu_model_memory_nvlink_numa_site_and_link(
    make_facts: Any, make_gpus: Any
) -> None:
    facts = make_facts(gpus=make_gpus(2), numa_nodes=2, network_bytes_per_s=1.25e9, switch="sw1")
    labels = grid_labels(facts)
    assert labels == {
        "site": "lab",
        "switch": "sw1",
        "numa-nodes": "2",
        "gpu-model": "rtx-3090",
        "nvlink-domain-gpus": "2",
        "gpu-memory-gib": "22",  # 24e9 bytes
        "link-gbps": "10.0",
        "storage": "no",
    }


def test_custom_resources_count_gpu_memory_and_the_storage_role(
    make_facts: Any, make_gpus: Any
) -> None:
    resources = ray_resources(make_facts(gpus=make_gpus(2), storage_path="/srv/grid"))
    assert resources["rigwise-gpu-memory-gib"] == pytest.approx(2 * 24e9 / 2**30)
    assert resources["rigwise-storage"] == 1.0
    assert ray_resources(make_facts()) == {}  # no GPUs, no storage: nothing custom
