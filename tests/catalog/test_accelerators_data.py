"""The accelerator catalog against vendor datasheets: dense, never sparse, every row sourced."""

from __future__ import annotations

import re

import pytest

from rigwise.catalog.loader import read_csv
from rigwise.hardware import accelerators, get_accelerator
from rigwise.hardware.catalog import _package_files

TOLERANCE = 0.01  # 1 %: datasheets round to 3-4 significant digits
TERA = 1e12

# (id, dtype, dense TFLOPS, where the number is printed). Where a datasheet prints only the
# sparse figure (marked *), the expected dense value is half of it.
DATASHEET_DENSE = [
    ("a100-sxm-80gb", "bf16", 312, "NVIDIA A100 datasheet: BF16 Tensor Core 312 | 624*"),
    ("a100-sxm-80gb", "tf32", 156, "NVIDIA A100 datasheet: TF32 Tensor Core 156 | 312*"),
    ("a100-pcie-40gb", "int8", 624, "NVIDIA A100 datasheet: INT8 Tensor Core 624 | 1248*"),
    ("h100-sxm", "bf16", 989.5, "NVIDIA H100 datasheet SXM: BF16 Tensor Core 1,979* (sparse)"),
    ("h100-sxm", "fp8", 1979, "NVIDIA H100 datasheet SXM: FP8 Tensor Core 3,958* (sparse)"),
    ("h100-pcie", "bf16", 756.5, "NVIDIA H100 datasheet PCIe: BF16 Tensor Core 1,513* (sparse)"),
    ("h100-nvl", "fp8", 1670.5, "NVIDIA H100 datasheet NVL: FP8 Tensor Core 3,341* (sparse)"),
    ("h200-sxm", "bf16", 989.5, "NVIDIA H200 datasheet SXM: BF16 Tensor Core 1,979* (sparse)"),
    ("b200", "fp4", 9000, "NVIDIA HGX B200 datasheet per GPU: FP4 Tensor Core 18 PFLOPS*"),
    ("b200", "bf16", 2250, "NVIDIA HGX B200 datasheet per GPU: FP16/BF16 4.5 PFLOPS*"),
    ("l4", "fp8", 242.5, "NVIDIA L4 datasheet: FP8 Tensor Core 485* (sparse)"),
    ("l40s", "bf16", 362.05, "NVIDIA L40S datasheet: BF16 Tensor Core 362.05 | 733*"),
    ("a10", "bf16", 125, "NVIDIA A10 datasheet: BF16 Tensor Core 125 | 250*"),
    ("v100-sxm2-16gb", "fp16", 125, "NVIDIA V100 datasheet SXM2: Tensor Performance 125 TFLOPS"),
    ("t4", "fp16", 65, "NVIDIA T4 datasheet: Mixed Precision (FP16/FP32) 65 TFLOPS"),
    ("t4", "int8", 130, "NVIDIA T4 datasheet: INT8 130 TOPS"),
    ("rtx-3090", "fp16", 71, "NVIDIA GA102 whitepaper RTX 3090: FP16 Tensor w/ FP32 acc 71/142"),
    (
        "rtx-4090",
        "bf16",
        165.2,
        "NVIDIA Ada whitepaper RTX 4090: FP16 Tensor w/ FP32 acc 165.2/330.4",
    ),
    (
        "rtx-4090",
        "fp8",
        330.3,
        "NVIDIA Ada whitepaper RTX 4090: FP8 Tensor w/ FP32 acc 330.3/660.6",
    ),
    (
        "rtx-6000-ada",
        "fp8",
        728.5,
        "NVIDIA RTX 6000 Ada datasheet: Tensor performance 1,457* (FP8)",
    ),
    (
        "rtx-a6000",
        "fp16",
        154.8,
        "NVIDIA GA102 whitepaper RTX A6000: FP16 Tensor w/ FP32 acc 154.8",
    ),
    ("rtx-5090", "fp4", 1676, "NVIDIA RTX Blackwell whitepaper: FP4 w/ FP32 acc 1676/3352"),
    ("rtx-5090", "fp8", 419, "NVIDIA RTX Blackwell whitepaper: FP8 w/ FP32 acc 419/838"),
    ("mi300x", "bf16", 1307.4, "AMD Instinct MI300X datasheet: peak BF16 1307.4 TFLOPs (dense)"),
    ("mi300x", "fp8", 2614.9, "AMD Instinct MI300X datasheet: peak FP8 2614.9 TFLOPs (dense)"),
    ("gaudi3", "bf16", 1835, "Intel Gaudi 3 (Hot Chips 2024): BF16 Matrix TFLOPs 1835"),
    ("tpu-v5e", "bf16", 197, "Google Cloud TPU v5e docs: peak compute per chip (bf16) 197"),
    ("tpu-v5p", "bf16", 459, "Google Cloud TPU v5p docs: peak compute per chip (bf16) 459"),
    ("rtx-2080-ti", "fp16", 53.8, "NVIDIA Turing whitepaper 2080 Ti: FP16 Tensor w/ FP32 acc 53.8"),
    ("rtx-a4000", "fp16", 76.7, "NVIDIA RTX A4000 datasheet: Tensor 153.4* (sparse)"),
    ("rtx-a2000-12gb", "fp16", 31.95, "NVIDIA RTX A2000 datasheet: Tensor 63.9* (sparse)"),
    ("b300", "fp4", 13500, "NVIDIA HGX B300 datasheet, 8 GPUs: FP4 144 PF* | 108 PF dense"),
    ("b300", "bf16", 2250, "NVIDIA HGX B300 datasheet, 8 GPUs: FP16/BF16 36 PFLOPS*"),
    ("gb200", "bf16", 2500, "NVIDIA GB200 NVL72 datasheet, 72 GPUs: FP16/BF16 360 PFLOPS*"),
    ("gb300", "fp4", 15000, "NVIDIA GB300 NVL72 datasheet, 72 GPUs: FP4 1,440 PF* | 1,080 PF"),
    ("mi355x", "fp8", 5033.1, "AMD MI355X: 256 CUs x 8192 FP8 FLOP/clk x 2.4 GHz (ISSCC 2026)"),
    ("arc-pro-b50", "int8", 170.3, "Intel Arc Pro B50 specifications: 170 peak INT8 TOPS"),
]

# Blackwell Ultra runs dense FP4 at 1.5x Blackwell while bf16 stays at the Blackwell rate, so its
# fp4 is 6x bf16 (HGX B300: FP4 108 PF dense vs FP16/BF16 36 PF* for 8 GPUs; GB300 NVL72 likewise).
BLACKWELL_ULTRA = {"b300", "gb300"}

# (id, memory GB, bandwidth GB/s, source)
DATASHEET_MEMORY = [
    ("h100-sxm", 80, 3350, "NVIDIA H100 datasheet: 80 GB, 3.35 TB/s"),
    ("h200-sxm", 141, 4800, "NVIDIA H200 datasheet: 141 GB, 4.8 TB/s"),
    ("a100-sxm-80gb", 80, 2039, "NVIDIA A100 datasheet: 80 GB HBM2e, 2,039 GB/s"),
    ("rtx-4090", 24, 1008, "NVIDIA Ada whitepaper: 24 GB GDDR6X, 1008 GB/s"),
    ("rtx-3090", 24, 936, "NVIDIA GA102 whitepaper: 24 GB GDDR6X, 936 GB/s"),
    ("mi300x", 192, 5300, "AMD MI300X datasheet: 192 GB HBM3, 5.3 TB/s"),
    ("dgx-spark-gb10", 128, 273, "NVIDIA DGX Spark: 128 GB LPDDR5x, 273 GB/s"),
    ("tpu-v5e", 16, 819, "Google Cloud TPU v5e docs: 16 GB, 819 GBps"),
    ("rtx-2080-ti", 11, 616, "NVIDIA Turing whitepaper: 11 GB GDDR6, 616 GB/s"),
    ("mi355x", 288, 8000, "AMD MI355X datasheet: 288 GB HBM3E, 8 TB/s"),
    ("rx-9070-xt", 16, 640, "AMD RX 9070 XT: 16 GB GDDR6 20 Gbps x 256 bit = 640 GB/s"),
    ("ryzen-ai-max-plus-395", 128, 256, "AMD Ryzen AI Max+ 395: LPDDR5X-8000 x 256 bit"),
    ("arc-b580", 12, 456, "Intel Arc B580: 12 GB GDDR6 19 Gbps x 192 bit = 456 GB/s"),
]

# Every GPU the seeds name (seed 000 and 003), as the seeds spell them.
SEED_GPUS = [
    "Tesla P40", "Tesla P100", "Tesla T4", "V100 PCIe 16GB", "V100 SXM2 32GB", "A100 40GB PCIe",
    "A100 SXM 80GB", "H100 PCIe", "H100 SXM", "H100 NVL", "Quadro RTX 8000", "Quadro P6000",
    "Quadro GP100", "Quadro RTX A4500", "RTX Titan", "RTX 3060", "RTX 3080", "RTX 3090",
    "RTX 3090 Ti", "RTX 4060Ti 16gb", "RTX 4070 Ti Super", "RTX 4080", "RTX 4080 Super",
    "RTX 4090", "RX 6600", "RX 7900 XTX", "L40S", "RTX 6000 Ada",
]  # fmt: skip


@pytest.mark.parametrize(("device_id", "dtype", "tflops", "source"), DATASHEET_DENSE)
def test_dense_tensor_peaks_match_the_datasheets(
    device_id: str, dtype: str, tflops: float, source: str
) -> None:
    stored = get_accelerator(device_id).flops[dtype] / TERA
    assert stored == pytest.approx(tflops, rel=TOLERANCE), source


@pytest.mark.parametrize(("device_id", "memory_gb", "bandwidth_gb_s", "source"), DATASHEET_MEMORY)
def test_memory_and_bandwidth_match_the_datasheets(
    device_id: str, memory_gb: float, bandwidth_gb_s: float, source: str
) -> None:
    acc = get_accelerator(device_id)
    assert acc.memory_bytes == pytest.approx(memory_gb * 2**30, rel=TOLERANCE), (
        source
    )  # GB sold = GiB
    assert acc.memory_bandwidth_bytes_per_s == pytest.approx(bandwidth_gb_s * 1e9, rel=TOLERANCE)


@pytest.mark.parametrize("name", SEED_GPUS)
def test_every_seed_gpu_is_in_the_catalog(name: str) -> None:
    assert get_accelerator(name).kind == "gpu"


@pytest.mark.parametrize("acc", accelerators(), ids=lambda a: a.id)
def test_rows_are_consistent(acc: object) -> None:
    from rigwise.hardware import Accelerator

    assert isinstance(acc, Accelerator)
    flops = acc.flops
    # Slack for datasheets that round or print dtypes inconsistently (L40S: BF16 dense 362.05 but
    # FP8 dense 733, ratio 2.025). A stored sparse value is 2x off, far outside this slack.
    eps = 1.03
    half = max(flops.get("fp16", 0), flops.get("bf16", 0), acc.fp16_acc16_flops or 0)
    # A stored sparse figure would show up as fp8 at 4x (or more) the fp16-accumulate rate.
    if "fp8" in flops and half:
        assert flops["fp8"] <= 2 * half * eps, "fp8 above 2x the best fp16 rate: sparse?"
    # GeForce Blackwell runs fp4 (fp32 accumulate) at 4x its fp16-accumulate fp16 rate.
    if "fp4" in flops and half:
        ratio = 6 if acc.id in BLACKWELL_ULTRA else 4
        assert flops["fp4"] <= ratio * half * eps, "fp4 above 4x the best fp16 rate: sparse?"
    if "bf16" in flops and acc.fp16_acc16_flops:
        assert flops["bf16"] <= acc.fp16_acc16_flops * eps
    if "tf32" in flops and "bf16" in flops:
        assert flops["tf32"] <= flops["bf16"] * eps
    if "bf16" in flops and "fp16" in flops:
        assert flops["bf16"] == pytest.approx(flops["fp16"], rel=TOLERANCE)
    assert acc.memory_bytes > 0 and acc.memory_bandwidth_bytes_per_s > 0
    assert acc.source and re.fullmatch(r"\d{4}-\d{2}-\d{2}", acc.retrieved)
    if acc.street_price_usd:
        assert re.fullmatch(r"\d{4}-\d{2}", acc.street_price_date)


def test_datasheet_sample_is_large_enough_and_cited() -> None:
    devices = {row[0] for row in DATASHEET_DENSE}
    assert len(devices) >= 12
    assert all(len(row[3]) > 10 for row in DATASHEET_DENSE)


def test_seed_prices_carry_the_seed_as_source() -> None:
    for device_id, price in [("p40", 297.89), ("rtx-3090", 679.99), ("titan-rtx", 649.99)]:
        acc = get_accelerator(device_id)
        assert acc.street_price_usd == pytest.approx(price)
        assert "000_93b151c0ce0fd302" in acc.source


def test_every_accelerator_file_uses_the_shared_columns() -> None:
    reference = list(read_csv("accelerators.csv")[0])
    for name in _package_files(r"accelerators.*\.csv"):
        rows = read_csv(name)
        assert rows, name
        assert set(reference) <= set(rows[0]), f"{name} lacks columns"
