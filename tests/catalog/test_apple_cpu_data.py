"""Apple silicon and CPU platform rows (accelerators_apple.csv, accelerators_cpu.csv) and the
Apple GPU memory limits (apple_memory_limits.csv): published figures, internal consistency, and
the names people type."""

from __future__ import annotations

import itertools
import re
from collections import defaultdict

import pytest

from rigwise.catalog import normalize, read_csv

APPLE = "accelerators_apple.csv"
CPU = "accelerators_cpu.csv"
LIMITS = "apple_memory_limits.csv"
GiB = 2.0**30


def _rows(name: str) -> dict[str, dict[str, str]]:
    return {row["id"]: row for row in read_csv(name)}


def _num(row: dict[str, str], column: str) -> float:
    return float(row[column])


def _family_cores_memory(device_id: str) -> tuple[str, int, int]:
    match = re.fullmatch(r"(m\d(?:-pro|-max|-ultra)?)-(\d+)c-(\d+)gb", device_id)
    assert match, f"Apple id {device_id!r} does not follow <family>-<cores>c-<memory>gb"
    return match.group(1), int(match.group(2)), int(match.group(3))


# --- Apple: which variants exist --------------------------------------------------------------

# GPU cores -> memory sizes Apple sold, from Apple's tech specs pages (cited in the CSV rows).
APPLE_VARIANTS = {
    "m1": {7: {8, 16}, 8: {8, 16}},
    "m1-pro": {14: {16, 32}, 16: {16, 32}},
    "m1-max": {24: {32, 64}, 32: {32, 64}},
    "m1-ultra": {48: {64, 128}, 64: {64, 128}},
    "m2": {8: {8, 16, 24}, 10: {8, 16, 24}},
    "m2-pro": {16: {16, 32}, 19: {16, 32}},
    "m2-max": {30: {32, 64}, 38: {32, 64, 96}},
    "m2-ultra": {60: {64, 128, 192}, 76: {64, 128, 192}},
    "m3": {8: {8, 16, 24}, 10: {8, 16, 24}},
    "m3-pro": {14: {18, 36}, 18: {18, 36}},
    "m3-max": {30: {36, 96}, 40: {48, 64, 128}},
    "m3-ultra": {60: {96, 256}, 80: {96, 256, 512}},
    "m4": {8: {16, 24}, 10: {16, 24, 32}},
    "m4-pro": {16: {24, 48, 64}, 20: {24, 48, 64}},
    "m4-max": {32: {36}, 40: {48, 64, 128}},
    # M5 (Apple newsroom 2025-10-15): 10-core GPU, 16/24/32 GB. M5 Pro / M5 Max (2026-03-03): only
    # the top configuration Apple's announcement states (smaller bins not yet catalogued).
    "m5": {10: {16, 24, 32}},
    "m5-pro": {20: {64}},
    "m5-max": {40: {128}},
}

# Families whose GPU cores carry matrix units (M5's per-core Neural Accelerators): Apple states
# "over 4x the peak GPU compute for AI" of the M4 generation, stored as fp16 = 4 x fp32.
MATRIX_FAMILIES = {"m5", "m5-pro", "m5-max"}


def test_apple_rows_are_exactly_the_variants_apple_sold() -> None:
    found: dict[str, dict[int, set[int]]] = defaultdict(lambda: defaultdict(set))
    for device_id in _rows(APPLE):
        family, cores, memory = _family_cores_memory(device_id)
        found[family][cores].add(memory)
    assert {f: dict(c) for f, c in found.items()} == APPLE_VARIANTS


# --- Apple: published bandwidth and TFLOPS ---------------------------------------------------

# (family, GPU cores) -> memory bandwidth in GB/s as Apple states it.
APPLE_BANDWIDTH = [
    ("m1", 8, 68.25),  # LPDDR4X-4266 x 128 bit (Apple states none)
    ("m1-pro", 16, 200),  # Apple newsroom 2021-10-18
    ("m1-max", 32, 400),  # Apple newsroom 2021-10-18
    ("m1-ultra", 64, 800),  # Apple newsroom 2022-03-08
    ("m2", 10, 100),  # Apple newsroom 2022-06-06
    ("m2-pro", 19, 200),  # Apple newsroom 2023-01-17
    ("m2-max", 38, 400),  # Apple newsroom 2023-01-17
    ("m2-ultra", 76, 800),  # Apple newsroom 2023-06-05
    ("m3", 10, 100),  # Apple tech specs MacBook Pro 14 (M3)
    ("m3-pro", 18, 150),  # Apple tech specs MacBook Pro (Nov 2023)
    ("m3-max", 30, 300),  # Apple tech specs MacBook Pro (Nov 2023)
    ("m3-max", 40, 400),  # Apple tech specs MacBook Pro (Nov 2023)
    ("m3-ultra", 80, 819),  # Apple tech specs Mac Studio (2025), 819 GB/s
    ("m4", 10, 120),  # Apple newsroom 2024-10-29
    ("m4-pro", 20, 273),  # Apple newsroom 2024-10-30
    ("m4-max", 32, 410),  # Apple tech specs MacBook Pro (2024)
    ("m4-max", 40, 546),  # Apple newsroom 2024-10-30
    ("m5", 10, 153),  # Apple newsroom 2025-10-15
    ("m5-pro", 20, 307),  # Apple newsroom 2026-03-03
    ("m5-max", 40, 614),  # Apple newsroom 2026-03-03
]


@pytest.mark.parametrize(("family", "cores", "gb_s"), APPLE_BANDWIDTH)
def test_apple_bandwidth_matches_apple(family: str, cores: int, gb_s: float) -> None:
    rows = [r for i, r in _rows(APPLE).items() if _family_cores_memory(i)[:2] == (family, cores)]
    assert rows
    for row in rows:
        assert _num(row, "memory_bandwidth_gb_s") == pytest.approx(gb_s, rel=0.01)


# Apple's own GPU TFLOPS figures (newsroom announcements); only M1 and M2 families have them.
APPLE_TFLOPS = [
    ("m1", 8, 2.6),
    ("m1-pro", 16, 5.2),
    ("m1-max", 32, 10.4),
    ("m1-ultra", 64, 21.0),
    ("m2", 10, 3.6),
    ("m2-pro", 19, 6.8),
    ("m2-max", 38, 13.6),
    ("m2-ultra", 76, 27.2),
]


@pytest.mark.parametrize(("family", "cores", "tflops"), APPLE_TFLOPS)
def test_apple_fp32_matches_apples_tflops(family: str, cores: int, tflops: float) -> None:
    rows = [r for i, r in _rows(APPLE).items() if _family_cores_memory(i)[:2] == (family, cores)]
    assert rows
    for row in rows:
        assert _num(row, "fp32_tflops") == pytest.approx(tflops, rel=0.02)


def test_apple_gpu_clock_implied_by_fp32_is_plausible() -> None:
    # fp32 = cores x 128 ALUs x 2 FLOP x clock (philipturner/metal-benchmarks); Apple GPU clocks
    # sit between 1.2 and 1.8 GHz, so anything outside means a typo or a sparse/NPU figure.
    for device_id, row in _rows(APPLE).items():
        _, cores, _ = _family_cores_memory(device_id)
        clock_ghz = _num(row, "fp32_tflops") * 1e12 / (cores * 128 * 2) / 1e9
        assert 1.2 <= clock_ghz <= 1.8, (device_id, clock_ghz)


def test_apple_gpu_has_no_matrix_speedup() -> None:
    # No matrix units before M5: fp16 and bf16 run at the fp32 rate; no tf32/fp8/int8/fp4 claims.
    # M5 families: fp16/bf16 at 4x fp32 (Apple's figure, rounded down), never more.
    for device_id, row in _rows(APPLE).items():
        fp32 = _num(row, "fp32_tflops")
        assert _num(row, "vector_fp32_tflops") == fp32, device_id
        matrix = _family_cores_memory(device_id)[0] in MATRIX_FAMILIES
        for column in ("fp16_tflops", "bf16_tflops"):
            if matrix:
                assert 3.9 * fp32 <= _num(row, column) <= 4 * fp32, (device_id, column)
            else:
                assert _num(row, column) == fp32, (device_id, column)
        for column in ("tf32_tflops", "fp8_tflops", "int8_tops", "fp4_tflops"):
            assert row[column] == "", (device_id, column)


def test_apple_rows_within_a_variant_differ_only_in_memory_and_price() -> None:
    groups: dict[tuple[str, int], list[dict[str, str]]] = defaultdict(list)
    for device_id, row in _rows(APPLE).items():
        groups[_family_cores_memory(device_id)[:2]].append(row)
    shared = ("memory_bandwidth_gb_s", "fp32_tflops", "tdp_w", "launch_year", "memory_type")
    for key, rows in groups.items():
        for column in shared:
            assert len({r[column] for r in rows}) == 1, (key, column)


def test_apple_memory_upgrades_cost_more() -> None:
    groups: dict[tuple[str, int], list[tuple[int, float]]] = defaultdict(list)
    for device_id, row in _rows(APPLE).items():
        family, cores, memory = _family_cores_memory(device_id)
        if row["launch_price_usd"]:
            groups[(family, cores)].append((memory, _num(row, "launch_price_usd")))
    for key, priced in groups.items():
        prices = [price for _, price in sorted(priced)]
        assert prices == sorted(prices) and len(set(prices)) == len(prices), (key, priced)


def test_apple_family_name_is_on_exactly_the_biggest_variant() -> None:
    by_family: dict[str, list[str]] = defaultdict(list)
    for device_id, row in _rows(APPLE).items():
        family = _family_cores_memory(device_id)[0]
        display = row["default_for"]
        if display:
            assert display in row["aliases"].split(";")
            by_family[family].append(device_id)
    for family, variants in APPLE_VARIANTS.items():
        top_cores = max(variants)
        expected = f"{family}-{top_cores}c-{max(variants[top_cores])}gb"
        assert by_family[family] == [expected]


# --- CPU rows ---------------------------------------------------------------------------------

_TRANSFERS = re.compile(r"(?:DDR\d|LPDDR\dX?)-(\d+)")
_CHANNELS = re.compile(r"(\d+) channels")


@pytest.mark.parametrize("device_id", sorted(_rows(CPU)))
def test_cpu_bandwidth_is_channels_times_transfer_rate(device_id: str) -> None:
    row = _rows(CPU)[device_id]
    transfers = _TRANSFERS.search(row["memory_type"])
    assert transfers, row["memory_type"]
    bytes_per_transfer = 4 if "32-bit" in row["memory_type"] else 8
    channels_match = _CHANNELS.search(row["name"])
    channels = int(channels_match.group(1)) if channels_match else 1
    expected = channels * int(transfers.group(1)) * bytes_per_transfer / 1000
    assert _num(row, "memory_bandwidth_gb_s") == pytest.approx(expected, rel=0.001)


# Vendor spec sheets (AMD product pages, Intel ARK): total cores, base GHz; FP32 FLOP/cycle from
# the vendors' optimization manuals (cited in the CSV); bf16 FLOP/cycle where the CPU has it.
CPU_PEAKS = [
    ("ryzen-9-5950x-ddr4-3200", [(16, 3.4, 32)], 0),
    ("core-i9-13900k-ddr5-5600", [(8, 3.0, 32), (16, 2.2, 16)], 0),
    ("ryzen-9-7950x-ddr5-6000", [(16, 4.5, 32)], 64),
    ("ryzen-9-9950x-ddr5-5600", [(16, 4.3, 64)], 128),
    ("core-i9-10980xe-4ch-ddr4-2933", [(18, 3.0, 64)], 0),
    ("threadripper-7980x-4ch-ddr5-5200", [(64, 3.2, 32)], 64),
    ("threadripper-pro-7995wx-8ch-ddr5-5200", [(96, 2.5, 32)], 64),
    ("xeon-w9-3495x-8ch-ddr5-4800", [(56, 1.9, 64)], 1024),
    ("xeon-8480plus-8ch-ddr5-4800", [(56, 2.0, 64)], 1024),
    ("xeon-8592plus-8ch-ddr5-5600", [(64, 1.9, 64)], 1024),
    ("epyc-9004-12ch-ddr5-4800", [(96, 2.4, 32)], 64),
    ("epyc-9005-12ch-ddr5-6000", [(128, 2.7, 64)], 128),
    ("xeon-e5-2699-v4-4ch-ddr4-2400", [(22, 2.2, 32)], 0),
    ("xeon-e5-2697-v2-4ch-ddr3-1866", [(12, 2.7, 16)], 0),
    ("raspberry-pi-cm4-8gb", [(4, 1.5, 8)], 0),
    ("raspberry-pi-cm5-8gb", [(4, 2.4, 16)], 0),
    ("raspberry-pi-5-16gb", [(4, 2.4, 16)], 0),
]


@pytest.mark.parametrize(("device_id", "groups", "bf16_per_cycle"), CPU_PEAKS)
def test_cpu_peaks_follow_cores_clock_and_flops_per_cycle(
    device_id: str, groups: list[tuple[int, float, int]], bf16_per_cycle: int
) -> None:
    row = _rows(CPU)[device_id]
    fp32 = sum(cores * ghz * per_cycle for cores, ghz, per_cycle in groups) / 1000
    assert _num(row, "fp32_tflops") == pytest.approx(fp32, rel=0.01)
    assert _num(row, "vector_fp32_tflops") == pytest.approx(fp32, rel=0.01)
    if bf16_per_cycle:
        bf16 = sum(cores * ghz for cores, ghz, _ in groups) * bf16_per_cycle / 1000
        assert _num(row, "bf16_tflops") == pytest.approx(bf16, rel=0.01)
    else:
        assert row["bf16_tflops"] == ""


def test_dual_socket_rows_double_their_single_socket_row() -> None:
    rows = _rows(CPU)
    pairs = [
        ("epyc-9004-2s-24ch-ddr5-4800", "epyc-9004-12ch-ddr5-4800"),
        ("epyc-9005-2s-24ch-ddr5-6000", "epyc-9005-12ch-ddr5-6000"),
        ("xeon-8480plus-2s-16ch-ddr5-4800", "xeon-8480plus-8ch-ddr5-4800"),
        ("xeon-e5-2699-v4-2s-8ch-ddr4-2400", "xeon-e5-2699-v4-4ch-ddr4-2400"),
        ("xeon-e5-2697-v2-2s-8ch-ddr3-1866", "xeon-e5-2697-v2-4ch-ddr3-1866"),
    ]
    for dual, single in pairs:
        for column in ("memory_bandwidth_gb_s", "fp32_tflops", "tdp_w"):
            assert _num(rows[dual], column) == pytest.approx(
                2 * _num(rows[single], column), rel=1e-3
            )


def test_amx_int8_is_twice_bf16_and_only_amx_rows_claim_int8() -> None:
    for device_id, row in _rows(CPU).items():
        if row["int8_tops"]:
            assert "AMX" in row["source"], device_id
            assert _num(row, "int8_tops") == pytest.approx(2 * _num(row, "bf16_tflops"), rel=1e-3)


# --- both files -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [APPLE, CPU])
def test_rows_are_complete(name: str) -> None:
    kind = {APPLE: "unified", CPU: "cpu"}[name]
    for device_id, row in _rows(name).items():
        assert re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", device_id)
        assert row["kind"] == kind
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", row["retrieved"])
        assert row["source"] and row["notes"]
        for column in ("memory_gb", "memory_bandwidth_gb_s", "fp32_tflops", "tdp_w"):
            assert _num(row, column) > 0, (device_id, column)
    assert len(read_csv(name)) == len(_rows(name)), "duplicate ids"


def _keys(row: dict[str, str]) -> set[str]:
    names = [row["id"], row["name"], *row["aliases"].split(";"), *row["default_for"].split(";")]
    return {normalize(n) for n in names if n.strip()}


def test_no_name_points_at_two_rows() -> None:
    owner: dict[str, str] = {}
    files = [APPLE, CPU]
    try:
        read_csv("accelerators.csv")
        files.append("accelerators.csv")
    except Exception:  # the GPU file is written in parallel; check against it once it exists
        pass
    for name in files:
        for device_id, row in _rows(name).items():
            keys = _keys(row) if name != "accelerators.csv" else {normalize(device_id)}
            for key in keys:
                assert owner.setdefault(key, device_id) == device_id, (key, owner[key], device_id)


# --- Apple GPU memory limits ----------------------------------------------------------------

# recommendedMaxWorkingSetSize printed by llama.cpp's Metal backend (MB = 1e6 bytes) on macOS 13-15
# for machines of a given marketed size (sources in apple_memory_limits.csv).
OBSERVED_WORKING_SET = [
    (16, 11453.25),
    (32, 22906.50),
    (36, 28991.03),
    (64, 51539.61),
    (128, 103079.22),
]


def _fraction(memory_gb: float) -> float:
    for row in read_csv(LIMITS):
        if _num(row, "min_memory_gb") <= memory_gb < _num(row, "max_memory_gb"):
            return _num(row, "gpu_fraction")
    raise AssertionError(f"no apple_memory_limits.csv row covers {memory_gb} GB")


@pytest.mark.parametrize(("memory_gb", "observed_mb"), OBSERVED_WORKING_SET)
def test_gpu_working_set_matches_metal(memory_gb: int, observed_mb: float) -> None:
    predicted_mb = memory_gb * GiB * _fraction(memory_gb) / 1e6
    assert predicted_mb == pytest.approx(observed_mb, rel=0.001)


def test_limits_cover_every_apple_row_without_overlap() -> None:
    rows = sorted(read_csv(LIMITS), key=lambda r: _num(r, "min_memory_gb"))
    for lower, upper in itertools.pairwise(rows):
        assert _num(lower, "max_memory_gb") == _num(upper, "min_memory_gb")
    for row in rows:
        assert 0.5 < _num(row, "gpu_fraction") < 1.0
        assert row["source"] and re.fullmatch(r"\d{4}-\d{2}-\d{2}", row["retrieved"])
    for apple in _rows(APPLE).values():
        _fraction(_num(apple, "memory_gb"))


# --- names people type (through the hardware loader) ------------------------------------------

NAMES = [
    ("M2 Ultra 76-Core GPU 192GB", "m2-ultra-76c-192gb"),
    ("m2-ultra-192gb", "m2-ultra-76c-192gb"),
    ("M2 Ultra 192GB", "m2-ultra-76c-192gb"),
    ("Apple M3 Max 40-core 128GB", "m3-max-40c-128gb"),
    ("M3 Max", "m3-max-40c-128gb"),
    ("M3 Max 30-core", "m3-max-30c-96gb"),
    ("M3 Max 36GB", "m3-max-30c-36gb"),
    ("M4 Max", "m4-max-40c-128gb"),
    ("M4 Max 32c 36GB", "m4-max-32c-36gb"),
    ("M1", "m1-8c-16gb"),
    ("M3 Ultra", "m3-ultra-80c-512gb"),
    ("Ryzen 9 7950X", "ryzen-9-7950x-ddr5-6000"),
    ("AMD Ryzen 9 9950X 16-Core Processor", "ryzen-9-9950x-ddr5-5600"),
    ("Intel Core i9-13900K", "core-i9-13900k-ddr5-5600"),
    ("EPYC 9004", "epyc-9004-12ch-ddr5-4800"),
    ("Xeon Platinum 8480+", "xeon-8480plus-8ch-ddr5-4800"),
    ("E5-2699 v4", "xeon-e5-2699-v4-4ch-ddr4-2400"),
]


@pytest.mark.parametrize(("typed", "expected"), NAMES)
def test_names_people_type_resolve(typed: str, expected: str) -> None:
    from rigwise.hardware import get_accelerator

    assert get_accelerator(typed).id == expected


def test_loader_reads_apple_and_cpu_rows_in_si_units() -> None:
    from rigwise.hardware import get_accelerator

    m3 = get_accelerator("m3-max-40c-128gb")
    assert m3.kind == "unified"
    assert m3.memory_bandwidth_bytes_per_s == pytest.approx(400e9)
    assert m3.flops["bf16"] == pytest.approx(m3.flops["fp32"])
    epyc = get_accelerator("epyc-9004-12ch-ddr5-4800")
    assert epyc.kind == "cpu"
    assert epyc.memory_bandwidth_bytes_per_s == pytest.approx(460.8e9)


# --- measured never beats the catalog's peaks ------------------------------------------------

LLAMA2_7B_PARAMS = 6_738_415_616  # Llama-2-7B config (exact count)
_FAMILY_IDS = {"M1": "m1", "M1 Pro": "m1-pro", "M1 Max": "m1-max", "M1 Ultra": "m1-ultra"}
_FAMILY_IDS |= {"M2": "m2", "M2 Pro": "m2-pro", "M2 Max": "m2-max", "M2 Ultra": "m2-ultra"}


def _llamacpp_apple_rows() -> list[dict[str, str]]:
    import csv
    from importlib import resources

    path = resources.files("rigwise").joinpath(
        "validation", "data", "inference", "llamacpp_discussion4167_apple_silicon_llama2_7b.csv"
    )
    if not path.is_file():
        pytest.skip("llama.cpp discussion 4167 measurements are not in the package")
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if not ln.startswith("#")]
    return list(csv.DictReader(lines))


def test_llamacpp_apple_measurements_stay_under_catalog_peaks() -> None:
    # Prefill of LLaMA-2 7B in F16 costs ~2 FLOP per parameter per token, and decode reads every
    # F16 weight once per token, so measured tokens/s x work must not exceed the chip's peaks.
    rows = _rows(APPLE)
    checked = 0
    for measured in _llamacpp_apple_rows():
        family = _FAMILY_IDS[measured["chip"]]
        device = next(
            r
            for i, r in rows.items()
            if _family_cores_memory(i)[:2] == (family, int(measured["gpu_cores"]))
        )
        if measured["f16_pp512_tps"]:
            achieved = 2 * LLAMA2_7B_PARAMS * float(measured["f16_pp512_tps"])
            assert achieved < _num(device, "fp16_tflops") * 1e12, measured["chip"]
        if measured["f16_tg128_tps"]:
            streamed = 2 * LLAMA2_7B_PARAMS * float(measured["f16_tg128_tps"])
            assert streamed < _num(device, "memory_bandwidth_gb_s") * 1e9, measured["chip"]
            checked += 1
    assert checked >= 10
