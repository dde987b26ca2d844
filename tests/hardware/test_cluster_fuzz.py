"""Fuzzing cluster YAML files: random structures and the known attacks (alias bombs, 50,000-deep
nesting, a billion nodes, /dev/zero) are clean InputErrors or bounded clusters, quickly."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rigwise.errors import InputError
from rigwise.hardware import load_cluster_file
from rigwise.hardware.nodes import MAX_DEVICES, MAX_NODES

EXAMPLES = int(os.environ.get("RIGWISE_FUZZ_EXAMPLES", "40"))
SCALARS = st.one_of(
    st.sampled_from(["rtx-4090", "8x h100-sxm", "2x rtx-3090+nvlink", "10gbe", "", "a" * 300]),
    st.sampled_from([0, -1, 1, 2, 10**9, 10**400, 1.5, float("nan"), float("inf"), True, None]),
)
ENTRY = st.fixed_dictionaries(
    {}, optional={"on": SCALARS, "count": SCALARS, "host_memory_gb": SCALARS, "extra": SCALARS}
)
DOCUMENT = st.one_of(
    st.fixed_dictionaries(
        {"nodes": st.one_of(st.lists(ENTRY, max_size=4), SCALARS)}, optional={"network": SCALARS}
    ),
    st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3), max_leaves=6),
)


def _read(path: Path) -> None:
    started = time.perf_counter()
    try:
        cluster = load_cluster_file(path)
    except InputError as exc:
        assert exc.message and len(exc.message) < 2000
    else:
        assert 1 <= len(cluster.nodes) <= MAX_NODES
        assert 1 <= cluster.accelerator_count <= MAX_DEVICES
    assert time.perf_counter() - started < 5.0


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck),
          derandomize=EXAMPLES <= 40)  # fmt: skip
@given(document=DOCUMENT)
def test_random_cluster_files_are_clusters_or_clean_errors(
    tmp_path_factory: pytest.TempPathFactory, document: Any
) -> None:
    path = tmp_path_factory.mktemp("cluster") / "cluster.yaml"
    path.write_text(yaml.safe_dump(document, allow_unicode=True), encoding="utf-8")
    _read(path)


BILLION_LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
    for i in range(9)
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (BILLION_LAUGHS, "aliases"),
        ("nodes: " + "[" * 50_000 + "]" * 50_000, "nesting"),
        ("nodes: [{on: rtx-4090, count: 1000000000}]", "count"),
        ("nodes: [{on: '99999999999999999999x h100-sxm'}]", "out of range"),
        ("nodes: [{on: rtx-4090, host_memory_gb: .nan}]", "host_memory_gb"),
        ("\x00\x01binary", "binary"),
        # before: one node (true read as 1)
        ("nodes: [{on: rtx-4090, count: true}]", "'nodes.0.count' = True: Value error, true is"),
        # before: the second 'nodes' replaced the first without a word
        ("nodes: [{on: rtx-4090}]\nnodes: [{on: h100-sxm}]", "duplicate key 'nodes'"),
    ],
)
def test_attacks_are_named_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(text, encoding="utf-8")
    started = time.perf_counter()
    with pytest.raises(InputError, match=message):
        load_cluster_file(path)
    assert time.perf_counter() - started < 5.0


@pytest.mark.parametrize("path", ["/dev/zero", "/", "/nonexistent/cluster.yaml"])
def test_devices_directories_and_missing_paths_are_named_errors(path: str) -> None:
    with pytest.raises(InputError, match="Cluster file"):
        load_cluster_file(path)


def test_a_huge_file_is_refused_by_size(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    with path.open("wb") as handle:
        handle.truncate(64 * 1024 * 1024)
    with pytest.raises(InputError, match="limit"):
        load_cluster_file(path)
