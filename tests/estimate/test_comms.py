"""Communication costs: the alpha-beta ring formulas on a hand-made link."""

from __future__ import annotations

import numpy as np
import pytest

from rigwise.errors import InputError
from rigwise.estimate import comms
from rigwise.hardware import Link

LINK = Link(id="test", name="test", kind="pcie", bandwidth_bytes_per_s=10e9, latency_s=5e-6)


def test_p2p_is_latency_plus_size_over_bandwidth() -> None:
    cost = comms.p2p(1e9, LINK)
    assert cost.bandwidth_seconds == pytest.approx(0.1)
    assert cost.seconds == pytest.approx(0.1 + 5e-6)


def test_ring_all_reduce_moves_twice_n_minus_one_over_n() -> None:
    cost = comms.ring_all_reduce(8e9, 8, LINK)
    assert cost.bytes_per_device == pytest.approx(2 * 7 / 8 * 8e9)
    assert cost.latency_seconds == pytest.approx(14 * 5e-6)


def test_all_reduce_equals_reduce_scatter_plus_all_gather() -> None:
    total = comms.reduce_scatter(4e9, 4, LINK).seconds + comms.all_gather(4e9, 4, LINK).seconds
    assert comms.ring_all_reduce(4e9, 4, LINK).seconds == pytest.approx(total)


def test_one_device_costs_nothing() -> None:
    assert comms.ring_all_reduce(1e9, 1, LINK).seconds == 0
    assert comms.all_to_all(1e9, 1, LINK).seconds == 0


def test_more_devices_approach_twice_the_buffer() -> None:
    small = comms.ring_all_reduce(1e9, 2, LINK).bandwidth_seconds
    large = comms.ring_all_reduce(1e9, 64, LINK).bandwidth_seconds
    assert small < large < 2 * 1e9 / LINK.bandwidth_bytes_per_s


def test_arrays_are_evaluated_elementwise() -> None:
    devices = np.array([2, 4, 8])
    cost = comms.ring_all_reduce(1e9, devices, LINK)
    expected = 2 * (devices - 1) / devices * 1e9 / 10e9
    assert np.allclose(cost.bandwidth_seconds, expected)


def test_link_without_bandwidth_is_an_input_error() -> None:
    broken = Link(id="x", name="x", kind="pcie", bandwidth_bytes_per_s=0.0, latency_s=0.0)
    with pytest.raises(InputError, match="'x'"):
        comms.p2p(1.0, broken)


def test_to_dict_has_the_total() -> None:
    data = comms.all_gather(1e9, 2, LINK).to_dict()
    assert data["seconds"] == pytest.approx(data["bandwidth_seconds"] + data["latency_seconds"])
    # the JSON is serialize.to_jsonable's: the fields in order, then the total
    assert list(data) == [
        "operation",
        "bytes_per_device",
        "bandwidth_seconds",
        "latency_seconds",
        "seconds",
    ]
