from __future__ import annotations

import datetime as dt

import pytest

from rigwise.catalog.loader import read_csv
from rigwise.design import parts
from rigwise.design.api import design_builds
from rigwise.errors import CatalogError, UnknownNameError

PART_FILES = [
    "motherboards",
    "cpus",
    "ram",
    "psus",
    "cases",
    "risers",
    "cooling",
    "nvlink_bridges",
    "storage",
    "network_cards",
    "power_limit_curves",
    "electricity_prices",
    "circuits",
    "power_connectors",
    "build_rules",
    "designer_formats",
    "gpu_coolers",
]
SEED_000_BOARDS = [
    "x10drg-q",
    "x9dri-ln4f-plus",
    "c9x299-rpgf-l",
    "z9pe-d16-2l",
    "x13dei",
    "x9drg-qf",
    "x99-ws-e-10g",
    "wrx80e-sage-se-wifi-ii",
    "wrx90-ws-evo",
    "mz73-lm0",
]
# (board id, seed-000 price): the seed's listed prices, new or used.
SEED_000_PRICES = [
    ("x10drg-q", 317.46),
    ("x9dri-ln4f-plus", 200.0),
    ("c9x299-rpgf-l", 180.0),
    ("z9pe-d16-2l", 325.0),
    ("x13dei", 1575.0),
    ("wrx80e-sage-se-wifi-ii", 1700.0),
    ("wrx90-ws-evo", 1750.0),
    ("mz73-lm0", 2550.0),
]


@pytest.mark.parametrize("name", PART_FILES)
def test_every_row_has_source_and_retrieved_date(name: str) -> None:
    rows = read_csv(f"parts/{name}.csv")
    assert rows
    for row in rows:
        assert row["source"]
        if "retrieved" in row:
            assert parts.parse_date(row["retrieved"]) is not None


@pytest.mark.parametrize(
    "name",
    [
        "motherboards",
        "cpus",
        "ram",
        "psus",
        "cases",
        "risers",
        "cooling",
        "nvlink_bridges",
        "storage",
        "network_cards",
    ],
)
def test_every_price_carries_a_date(name: str) -> None:
    for row in read_csv(f"parts/{name}.csv"):
        if row.get("price_new_usd") or row.get("price_used_usd"):
            assert parts.parse_date(row["price_date"]) is not None, row["id"]


@pytest.mark.parametrize("board_id", SEED_000_BOARDS)
def test_every_seed_000_board_is_in_the_catalog(board_id: str) -> None:
    board = parts.get_part("motherboard", board_id)
    assert board.slots and all(s.electrical_lanes <= s.physical_lanes for s in board.slots)


@pytest.mark.parametrize(("board_id", "price"), SEED_000_PRICES)
def test_seed_000_prices_are_copied(board_id: str, price: float) -> None:
    board = parts.get_part("motherboard", board_id)
    assert price in (board.price.new_usd, board.price.used_usd)


def test_seed_000_psu_and_cpus() -> None:
    assert parts.get_part("psu", "Corsair AX1600i").watts == 1600
    assert parts.get_part("cpu", "E5-2699 v4").price.used_usd == pytest.approx(175.23)
    assert parts.get_part("cpu", "i9-10980XE").pcie_lanes == 48


def test_slot_strings_parse_and_bad_ones_name_the_fix() -> None:
    slots = parts.parse_slots("1:16/16@4;4:16/4@4*", "test")
    assert [(s.position, s.electrical_lanes, s.chipset) for s in slots] == [
        (1, 16, False),
        (4, 4, True),
    ]
    with pytest.raises(CatalogError, match="position:physical/electrical@gen"):
        parts.parse_slots("1:x16", "test")


def test_unknown_part_suggests_close_names() -> None:
    with pytest.raises(UnknownNameError) as info:
        parts.get_part("motherboard", "x10drg")
    assert "x10drg-q" in info.value.suggestions


def test_price_staleness_is_relative_to_today() -> None:
    price = parts.Price(100.0, None, "2025-01-01", "test")
    assert not price.is_stale(dt.date(2025, 6, 1), 365)
    assert price.is_stale(dt.date(2026, 6, 1), 365)
    assert price.is_stale(dt.date(2025, 6, 1), 30)
    assert parts.Price(1.0, None, "", "x").is_stale(dt.date(2025, 1, 1), 365)  # undated


def test_used_price_falls_back_to_new() -> None:
    price = parts.Price(100.0, None, "2025-01", "test")
    assert price.pick(used=True) == 100.0
    assert parts.Price(100.0, 60.0, "2025-01", "t").pick(used=True) == 60.0


def test_a_circuit_reads_as_people_type_it() -> None:
    # before: '--circuit US-120V-15A' (or 'circuit: US-120V-15A' in a rig file) was unknown,
    # the suggestion its own lower-case spelling
    assert parts.circuit_id("US-120V-15A") == "us-120v-15a"
    assert design_builds(model="llama-3.1-8b", circuit="US 120V 15A", top=1).options
    with pytest.raises(UnknownNameError, match="Unknown circuit 'nope'"):
        parts.circuit_id("nope")
