"""Hand-made accelerators for the build tests (a module, not conftest, so tests can import it)."""

from __future__ import annotations

from rigwise.hardware import Accelerator


def make_gpu(
    id: str = "rtx-3090",
    *,
    memory_gb: float = 24,
    tdp: float = 350.0,
    width: float = 3.0,
    connectors: str = "2x 8-pin PCIe",
    nvlink: float = 56.25e9,
    price: float | None = 700.0,
    price_date: str = "2026-06-01",
    rent: float | None = 0.4,
    kind: str = "gpu",
    bandwidth_gb_s: float = 936.0,
) -> Accelerator:
    return Accelerator(
        id=id,
        name=id.upper(),
        vendor="nvidia",
        kind=kind,
        memory_bytes=memory_gb * 1e9,
        memory_type="gddr6x",
        memory_bandwidth_bytes_per_s=bandwidth_gb_s * 1e9,
        flops={"fp16": 71e12},
        vector_fp32_flops=35e12,
        tdp_watts=tdp,
        pcie_gen=4,
        pcie_lanes=16,
        nvlink_bytes_per_s=nvlink,
        form_factor="pcie" if kind == "gpu" else "soc",
        slot_width=width,
        power_connectors=connectors,
        street_price_usd=price,
        street_price_date=price_date,
        rental_usd_per_hour=rent,
        source="test fixture",
    )
