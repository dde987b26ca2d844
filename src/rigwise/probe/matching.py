"""Match what a driver calls a device to the catalog, without failing when the catalog can't.

The hardware catalog (``rigwise.hardware.get_accelerator``) resolves names such as
"NVIDIA GeForce RTX 4090". A probe must still work when a device is not in the catalog, or
when the catalog cannot be read, so every failure here is "no match" (None).
"""

from __future__ import annotations

from typing import Any

from rigwise.errors import RigwiseError


def find_accelerator(name: str) -> Any | None:
    """The catalog ``Accelerator`` for a driver's device name, or None."""
    if not name:
        return None
    from rigwise.hardware import get_accelerator

    candidates = [name]
    # Drivers add form-factor words the catalog may not alias ("NVIDIA H100 80GB HBM3").
    for suffix in (" PCIe", " SXM", " HBM3", " HBM3e"):
        if suffix in name:
            candidates.append(name.replace(suffix, ""))
    for candidate in candidates:
        try:
            return get_accelerator(candidate)
        except (RigwiseError, LookupError, ValueError):
            continue
    return None


def catalog_id(name: str) -> str | None:
    accelerator = find_accelerator(name)
    return getattr(accelerator, "id", None) if accelerator is not None else None
