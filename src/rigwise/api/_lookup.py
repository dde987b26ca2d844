"""Cached model and hardware lookups shared by the option-named planners.

Sweeps (``--queries``, the web UI's charts, the build designer) call the planners thousands of
times with the same names, so the parsed model and cluster are cached per argument tuple.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from rigwise.errors import InputError
from rigwise.hardware import Cluster
from rigwise.models import ModelSpec

if TYPE_CHECKING:
    from rigwise.estimate.training_layout import Geometry


@functools.lru_cache(maxsize=256)
def cached_model(name: str) -> ModelSpec:
    from rigwise.models import load_model

    return load_model(name)


@functools.lru_cache(maxsize=256)
def cached_geometry(name: str) -> Geometry:
    """The training geometry of ``cached_model(name)``, made once per model."""
    from rigwise.estimate.training_layout import geometry

    return geometry(cached_model(name))


@functools.lru_cache(maxsize=256)
def cached_cluster(
    on: str | None, nodes: int, network: str | None, path: str | None, example: str
) -> Cluster:
    """``--cluster FILE`` or ``--on HW [--nodes N --network NET]``; ``example`` fills the hint."""
    from rigwise import hardware

    if path:
        _alone_with_cluster(on, nodes, network)
        return hardware.load_cluster_file(path)
    if on == "this-machine":
        from rigwise.api.machine import this_machine

        return this_machine().cluster
    if on == "this-machine-measured":  # bench/measured.py MEASURED_ON: what bench measured
        from rigwise.api.machine import measured_machine

        return measured_machine().cluster
    if not on:
        raise InputError("No hardware given.", hint=f"Pass --on '{example}' (or --cluster FILE).")
    return hardware.parse_node(on, nodes=nodes, network=network)


def _alone_with_cluster(on: str | None, nodes: int, network: str | None) -> None:
    """The cluster file names the nodes and the network: --on, --nodes or --network beside it
    were dropped without a word (train then asked for the --network it was given)."""
    given = [
        flag
        for flag, value in (("--on", on), ("--nodes", nodes != 1), ("--network", network))
        if value
    ]
    if given:
        raise InputError(
            f"{' and '.join(given)} cannot be combined with --cluster (the file names the nodes "
            "and the network).",
            hint="Drop it, or write it in the cluster file: "
            'nodes: [{on: "2x rtx-4090", count: 2}], network: 10gbe.',
        )
