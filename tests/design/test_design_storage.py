from __future__ import annotations

import pytest

from rigwise.design.storage import plan_storage
from rigwise.errors import InputError


def test_raid10_and_raid6_usable_capacity() -> None:
    r10 = plan_storage(30e12, 100e6, level="raid10", drive="hdd-20tb")
    assert r10.usable_bytes == pytest.approx(r10.disks / 2 * 20e12)
    assert r10.usable_bytes >= 30e12 and r10.disks % 2 == 0
    r6 = plan_storage(30e12, 100e6, level="raid6", drive="hdd-20tb")
    assert r6.usable_bytes == pytest.approx((r6.disks - 2) * 20e12)
    assert r6.disks == 4  # 2 data + 2 parity hold 40 TB


def test_read_throughput_adds_disks() -> None:
    slow = plan_storage(10e12, 100e6, level="raid6")
    fast = plan_storage(10e12, 2e9, level="raid6")
    assert fast.disks > slow.disks and fast.read_bytes_per_s >= 2e9


def test_rebuild_exposure_grows_with_capacity_and_ure_rate() -> None:
    hdd8 = plan_storage(10e12, 1e6, level="raid10", drive="hdd-8tb")  # URE 1e14
    hdd20 = plan_storage(10e12, 1e6, level="raid10", drive="hdd-20tb")  # URE 1e15
    assert 0 < hdd20.rebuild_ure_probability < hdd8.rebuild_ure_probability < 1
    # 8 TB read at one error per 1e14 bits: 1 - exp(-0.64) ~ 0.47
    assert hdd8.rebuild_ure_probability == pytest.approx(0.473, abs=0.01)
    assert plan_storage(10e12, 1e6, level="raid6").survives_ure_during_rebuild


def test_bad_level_and_too_big() -> None:
    with pytest.raises(InputError):
        plan_storage(1e12, 1e6, level="raid5")
    assert not plan_storage(1e16, 1e6, level="raid6", max_disks=8).fits


def test_an_empty_dataset_is_bad_input() -> None:
    # before: 'rigwise build - --nas-dataset 0TB' sized a 6-disk raid6 array of 80 TB, exit 0
    with pytest.raises(InputError, match="no dataset to store"):
        plan_storage(0.0, 1e9)
