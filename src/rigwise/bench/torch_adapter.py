"""Everything that needs PyTorch, and the only module that imports it (lazily).

GPU matmul per dtype, device-copy, host<->device and GPU<->GPU bandwidth and all-reduce. The
Llama-architecture model for prefill/decode speed and one fine-tuning step is
``rigwise.bench.torch_llm``, which takes PyTorch from ``require_torch`` here.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

TORCH_DTYPES = {"fp32": "float32", "tf32": "float32", "fp16": "float16", "bf16": "bfloat16"}


def load_torch() -> tuple[Any | None, str | None]:
    # Number CUDA devices as NVML and nvidia-smi do (by PCI address), not fastest first.
    os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    try:
        import torch
    except ImportError:
        return None, "PyTorch is not installed (pip install 'rigwise[torch]')"
    if getattr(torch, "__file__", None) is None:  # a leftover folder, not an install
        where = next(iter(torch.__path__))
        return None, f"only a leftover 'torch' folder is at {where} (pip install torch)"
    return torch, None


def require_torch() -> Any:
    """PyTorch, or a ProbeError that says how to install it (never a bare assert)."""
    torch, reason = load_torch()
    if torch is None:
        from rigwise.errors import ProbeError

        raise ProbeError(
            f"This benchmark needs PyTorch: {reason}.",
            hint="pip install 'rigwise[torch]' (or pip install torch), then run it again.",
        )
    return torch


def cuda_devices() -> list[str]:
    return [name for name, _label, _address in cuda_device_addresses()]


def cuda_device_addresses() -> list[tuple[str, str, tuple[int, int, int] | None]]:
    """(torch device, device name, PCI (domain, bus, device)) of every visible CUDA GPU."""
    torch, _ = load_torch()
    if torch is None or not torch.cuda.is_available():
        return []
    found = []
    for index in range(torch.cuda.device_count()):
        properties = torch.cuda.get_device_properties(index)
        bus = getattr(properties, "pci_bus_id", None)
        address = (
            (
                int(getattr(properties, "pci_domain_id", 0)),
                int(bus),
                int(getattr(properties, "pci_device_id", 0)),
            )
            if bus is not None
            else None
        )
        found.append((f"cuda:{index}", str(properties.name), address))
    return found


def synchronize(torch: Any, device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


def _best(
    torch: Any, device: str, run: Callable[[], object], repeats: int, inner: int = 1
) -> float:
    """Fastest of ``repeats`` synchronised batches of ``inner`` back-to-back runs, after a
    warm-up, in seconds per run. Batching hides the launch and synchronisation cost (tens of
    microseconds) that would otherwise eat into sub-millisecond GPU kernels."""
    for _ in range(2):
        run()
    synchronize(torch, device)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            run()
        synchronize(torch, device)
        best = min(best, (time.perf_counter() - start) / inner)
    return best


def supports(device: str, dtype: str) -> bool:
    torch, _ = load_torch()
    if torch is None:
        return False
    if dtype == "fp8":
        # FP8 tensor cores from compute capability 8.9 (Ada) on (CUDA C Programming Guide).
        return device.startswith("cuda") and torch.cuda.get_device_capability(device) >= (8, 9)
    if dtype == "bf16" and device.startswith("cuda"):
        return bool(torch.cuda.is_bf16_supported())
    return dtype in TORCH_DTYPES


def matmul_flops(device: str, dtype: str, n: int, repeats: int = 10, inner: int = 1) -> float:
    """FLOP/s of an n x n x n product (2 n^3 operations) on ``device``."""
    torch = require_torch()
    previous_tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    if dtype == "fp8":
        a = torch.randn(n, n, device=device).to(torch.float8_e4m3fn)
        b = torch.randn(n, n, device=device).to(torch.float8_e4m3fn).t()  # column-major
        scale = torch.tensor(1.0, device=device)

        def run() -> object:
            return torch._scaled_mm(a, b, scale_a=scale, scale_b=scale, out_dtype=torch.bfloat16)
    else:
        torch_dtype = getattr(torch, TORCH_DTYPES[dtype])
        a = torch.randn(n, n, device=device, dtype=torch_dtype)
        b = torch.randn(n, n, device=device, dtype=torch_dtype)

        def run() -> object:
            return a @ b

    try:
        return 2.0 * n**3 / _best(torch, device, run, repeats, inner)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous_tf32


def device_copy_bandwidth(device: str, size_bytes: int, repeats: int = 10, inner: int = 1) -> float:
    """Bytes/s of a device-to-device copy, counting the read and the write (2 x size)."""
    torch = require_torch()
    source = torch.empty(size_bytes, dtype=torch.uint8, device=device)
    target = torch.empty_like(source)
    seconds = _best(torch, device, lambda: target.copy_(source), repeats, inner)
    return 2.0 * size_bytes / seconds


def host_transfer_bandwidth(
    device: str, size_bytes: int, to_device: bool, repeats: int = 5
) -> float:
    """Bytes/s of a pinned host <-> device copy in one direction."""
    torch = require_torch()
    host = torch.empty(size_bytes, dtype=torch.uint8, pin_memory=True)
    gpu = torch.empty(size_bytes, dtype=torch.uint8, device=device)
    source, target = (host, gpu) if to_device else (gpu, host)
    return size_bytes / _best(
        torch, device, lambda: target.copy_(source, non_blocking=True), repeats
    )


def peer_bandwidth(source: str, target: str, size_bytes: int, repeats: int = 5) -> float:
    torch = require_torch()
    a = torch.empty(size_bytes, dtype=torch.uint8, device=source)
    b = torch.empty(size_bytes, dtype=torch.uint8, device=target)

    def run() -> object:
        b.copy_(a)
        torch.cuda.synchronize(source)
        return None

    return size_bytes / _best(torch, target, run, repeats)


def allreduce_bus_bandwidth(devices: list[str], size_bytes: int, repeats: int = 5) -> float:
    """NCCL all-reduce across local GPUs in one process, as nccl-tests' "bus bandwidth":
    size / time x 2 (n - 1) / n (NVIDIA/nccl-tests doc/PERFORMANCE.md)."""
    torch = require_torch()
    import torch.cuda.nccl as nccl

    tensors = [torch.ones(size_bytes // 2, dtype=torch.bfloat16, device=d) for d in devices]

    def run() -> object:
        nccl.all_reduce(tensors)
        for device in devices:
            torch.cuda.synchronize(device)
        return None

    seconds = _best(torch, devices[0], run, repeats)
    n = len(devices)
    return size_bytes / seconds * 2 * (n - 1) / n


def free_device_memory(device: str) -> float:
    torch = require_torch()
    free, _total = torch.cuda.mem_get_info(device)
    return float(free)
