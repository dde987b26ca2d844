"""The SQLite store: runs, factors per accelerator and machine, history."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigwise.bench import calibration as store
from rigwise.errors import InputError


def _report(name: str, value: float) -> dict:  # type: ignore[type-arg]
    return {"measurements": [{"name": name, "device": "cpu", "value": value, "unit": "B/s"}]}


def test_store_and_load_latest_per_key(private_data_dir: Path) -> None:
    store.save_run(
        "machine-a",
        "2026-01-01T00:00:00+00:00",
        False,
        _report("x", 1),
        {"h200-sxm": {"decode_bandwidth_efficiency": 0.7, "matmul_efficiency_bf16": 0.8}},
    )
    store.save_run(
        "machine-a",
        "2026-01-02T00:00:00+00:00",
        True,
        _report("x", 2),
        {"h200-sxm": {"matmul_efficiency_bf16": 0.9, "not_a_key": 5.0}},
    )
    loaded = store.load_calibration("h200-sxm", "machine-a")
    # the quick run updated matmul but kept the earlier decode factor; unknown keys are dropped
    assert loaded == {"decode_bandwidth_efficiency": 0.7, "matmul_efficiency_bf16": 0.9}
    assert (private_data_dir / store.DB_NAME).exists()


def test_other_machines_and_accelerators_do_not_leak() -> None:
    store.save_run(
        "machine-a", "t", False, _report("x", 1), {"rtx-4090": {"matmul_efficiency_bf16": 0.5}}
    )
    assert store.load_calibration("rtx-4090", "machine-b") == {}
    assert store.load_calibration("rtx-3090", "machine-a") == {}


def test_nothing_stored_yet_is_empty() -> None:
    assert store.load_calibration("rtx-4090", "machine-a") == {}
    assert store.history("machine-a") == ()


def test_history_is_oldest_first_and_limited() -> None:
    for i in range(3):
        store.save_run("m", f"2026-01-0{i + 1}", False, _report("memory_triad", 10.0 + i), {})
    entries = store.history("m", limit=2)
    assert [e.values["memory_triad@cpu"] for e in entries] == [11.0, 12.0]
    assert entries[0].units["memory_triad@cpu"] == "B/s"


@pytest.mark.parametrize(
    ("key", "accepted"),
    [
        ("matmul_efficiency_fp8", True),
        ("memory_bandwidth_efficiency", True),
        ("prefill_compute_efficiency", True),
        ("decode_bandwidth_efficiency_x", False),
        ("bus_efficiency", False),
    ],
)
def test_calibration_keys(key: str, accepted: bool) -> None:
    assert store.is_calibration_key(key) is accepted


def test_a_damaged_store_is_named_not_an_internal_error(private_data_dir: Path) -> None:
    # before: DatabaseError, 'internal error at calibration.py:76' (exit 70) from bench
    # history, infer --calibrated and bench import alike
    private_data_dir.mkdir(parents=True)
    (private_data_dir / store.DB_NAME).write_text("not a database")
    with pytest.raises(InputError, match=r"Cannot open the calibration store .*not a database"):
        store.load_calibration("rtx-4090", "machine-a")


@pytest.mark.parametrize(
    ("change", "read"),
    [
        # before: exit 70 'internal error' (ValueError, JSONDecodeError, AttributeError, ...)
        ("UPDATE runs SET started_at = 'garbage'", "source"),
        ("UPDATE runs SET started_at = '2026-01-01T00:00:00'", "source"),  # no time zone
        ("UPDATE runs SET report_json = 'not json'", "history"),
        ("UPDATE runs SET report_json = 'not json'", "measured"),
        ("UPDATE runs SET report_json = '[1]'", "source"),
        ('UPDATE runs SET report_json = \'{"measurements": [{"x": 1}]}\'', "history"),
        ("UPDATE factors SET value = 'abc'", "load"),
    ],
)
def test_a_damaged_row_is_named_not_an_internal_error(change: str, read: str) -> None:
    import sqlite3

    from rigwise.bench.measured import latest_measured_platform

    store.save_run(
        "machine-a",
        "2026-01-01T00:00:00+00:00",
        False,
        {**_report("x", 1), "measured_platform": None},
        {"rtx-4090": {"decode_bandwidth_efficiency": 0.5}},
    )
    with sqlite3.connect(store.db_path()) as connection:
        connection.execute(change)
    connection.close()
    readers = {
        "source": lambda: store.calibration_source("rtx-4090", "machine-a"),
        "history": lambda: store.history("machine-a"),
        "load": lambda: store.load_calibration("rtx-4090", "machine-a"),
        "measured": lambda: latest_measured_platform("machine-a"),
    }
    with pytest.raises(InputError, match="has a damaged row") as caught:
        readers[read]()
    assert "Move it aside" in str(caught.value.hint)
