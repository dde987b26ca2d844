"""Rig compatibility checks, part 2: PSU headroom and transients, power connectors, the wall
circuit, RAM against VRAM, NVLink bridges and cooling. Thresholds are rows of
parts/build_rules.csv, circuits of parts/circuits.csv, connector ratings of
parts/power_connectors.csv.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter

from rigwise.design import parts
from rigwise.design.checks import Problem
from rigwise.design.power import PowerBreakdown
from rigwise.design.rigfile import PlacedGpu, Rig
from rigwise.units import format_bytes

_CONNECTOR_ITEM = re.compile(r"(\d+)\s*x\s*(.+)", re.I)


def connector_kind(text: str) -> str:
    """'16-pin 12VHPWR' -> '12vhpwr', '8-pin EPS' -> 'eps-8pin', '8-pin PCIe' -> 'pcie-8pin'."""
    lower = text.lower()
    if "12vhpwr" in lower or "16-pin" in lower or "12v-2x6" in lower:
        return "12vhpwr"
    if "eps" in lower or "cpu" in lower:
        return "eps-8pin"
    if "6-pin" in lower and "8" not in lower:
        return "pcie-6pin"
    return "pcie-8pin"


def parse_connectors(text: str) -> Counter[str]:
    """'2x 8-pin PCIe' -> {'pcie-8pin': 2}; '1x 6-pin + 1x 8-pin' -> both; '' -> {}."""
    needed: Counter[str] = Counter()
    # 'A / B' lists alternatives (e.g. the RTX 3090 FE 12-pin / partner 2x 8-pin): the last one is
    # the common partner-card layout; 'none (slot powered)' cards need no cable.
    text = (text or "").split("/")[-1]
    for item in re.split(r"[+,;]", text):
        item = item.strip()
        if not item or item.lower().startswith("none"):
            continue
        match = _CONNECTOR_ITEM.match(item)
        count, name = (int(match.group(1)), match.group(2)) if match else (1, item)
        needed[connector_kind(name)] += count
    return needed


def check_psu(rig: Rig, load: PowerBreakdown) -> list[Problem]:
    """Seed 003: PSU wattage at least 150% of the maximum system consumption."""
    capacity = rig.psu.watts * rig.psu_count
    headroom = parts.rule("psu_headroom_factor")
    wanted = load.total_watts * headroom
    if capacity < load.total_watts:
        return [
            Problem(
                "psu",
                "error",
                f"Overloaded PSU: the system draws about {load.total_watts:.0f} W and the PSU "
                f"gives "
                f"{capacity:.0f} W.",
                f"Use at least {wanted:.0f} W of PSU ({headroom:.0%} rule), add a second PSU, or "
                "power-limit the GPUs.",
            )
        ]
    if capacity < wanted:
        return [
            Problem(
                "psu",
                "warning",
                f"PSU {capacity:.0f} W is below {headroom:.0%} of the {load.total_watts:.0f} W "
                f"load "
                f"({wanted:.0f} W): little headroom, runs hot and loud.",
                f"Use a {wanted:.0f} W+ PSU or power-limit the GPUs.",
            )
        ]
    return []


def check_transients(rig: Rig, load: PowerBreakdown) -> list[Problem]:
    """GPU power excursions (ms-scale spikes) against what the PSU rides through."""
    gpu_spike = load.gpus_watts * parts.rule("gpu_transient_factor")
    peak = load.total_watts - load.gpus_watts + gpu_spike
    atx3 = rig.psu.atx_version.startswith("3")
    factor = parts.rule("atx3_excursion_factor" if atx3 else "legacy_psu_excursion_factor")
    tolerated = rig.psu.watts * rig.psu_count * factor
    if rig.gpus and peak > tolerated:
        return [
            Problem(
                "transients",
                "warning",
                f"GPU spikes may reach about {peak:.0f} W; the PSU rides through about "
                f"{tolerated:.0f} W ({'ATX 3.x' if atx3 else 'pre-ATX 3.0'}): random shutdowns.",
                "Use an ATX 3.x PSU with more capacity, or power-limit the GPUs.",
            )
        ]
    return []


def _adapter_inputs(kind: str, gpu: PlacedGpu) -> int:
    """8-pin PCIe cables an adapter needs to feed one ``kind`` connector of this card."""
    per_input = float(parts.connector_specs()["pcie-8pin"]["watts"])
    if kind == "12vhpwr":
        slot = float(parts.connector_specs()["slot"]["watts"])
        return max(1, math.ceil((gpu.power_limit_watts - slot) / per_input))
    return 2  # an EPS-to-PCIe adapter takes two 8-pin PCIe cables (product briefs)


def check_connectors(rig: Rig) -> list[Problem]:
    """Native 12VHPWR and EPS first; what is missing comes from 8-pin PCIe cables by adapter."""
    psu = rig.psu
    have_8pin = psu.pcie_8pin * rig.psu_count
    have_12v = psu.pcie_12vhpwr * rig.psu_count
    have_eps = psu.eps_8pin * rig.psu_count - rig.motherboard.eps_8pin
    problems = []
    if have_eps < 0:
        problems.append(
            Problem(
                "connectors",
                "error",
                f"The board needs {rig.motherboard.eps_8pin} EPS 8-pin CPU cables; the PSU has "
                f"{psu.eps_8pin * rig.psu_count}.",
                "Use a PSU with enough EPS cables.",
            )
        )
        have_eps = 0
    needed_8pin = 0
    for gpu in rig.gpus:
        for kind, count in parse_connectors(gpu.power_connectors).items():
            if kind == "12vhpwr":
                native = min(have_12v, count)
                have_12v -= native
                needed_8pin += (count - native) * _adapter_inputs(kind, gpu)
            elif kind == "eps-8pin":
                native = min(have_eps, count)
                have_eps -= native
                needed_8pin += (count - native) * _adapter_inputs(kind, gpu)
            else:
                needed_8pin += count
    if needed_8pin > have_8pin:
        problems.append(
            Problem(
                "connectors",
                "error",
                f"The GPUs need {needed_8pin} PCIe 8-pin cables (adapters included); the PSU has "
                f"{have_8pin}.",
                "Use a PSU with more PCIe cables (or native 12V-2x6), or a second PSU.",
            )
        )
    return problems


def check_circuit(rig: Rig, load: PowerBreakdown) -> list[Problem]:
    circuit = rig.circuit
    limit = float(circuit["volts"]) * float(circuit["amps"]) * float(circuit["continuous_fraction"])
    if load.wall_watts > limit:
        return [
            Problem(
                "circuit",
                "error",
                f"About {load.wall_watts:.0f} W at the wall exceeds the {circuit['name']} "
                f"circuit's "
                f"{limit:.0f} W continuous limit.",
                "Power-limit the GPUs, use a 230/240 V circuit, or split the load over circuits.",
            )
        ]
    return []


def check_ram_vs_vram(rig: Rig) -> list[Problem]:
    """Seed 003: system RAM 2-4x the GPUs' VRAM for training; at least 1x for inference."""
    if not rig.gpus:
        return []
    training = rig.task in ("train", "finetune")
    ratio = parts.rule("ram_to_vram_train" if training else "ram_to_vram_infer")
    wanted = rig.vram_bytes * ratio
    if rig.ram_bytes < wanted:
        return [
            Problem(
                "ram",
                "warning",
                f"{format_bytes(rig.ram_bytes)} RAM for {format_bytes(rig.vram_bytes)} of VRAM: "
                f"{rig.task} wants at least {ratio:g}x ({format_bytes(wanted)}).",
                f"Add RAM up to {format_bytes(wanted)}.",
            )
        ]
    return []


def check_nvlink(rig: Rig) -> list[Problem]:
    problems = []
    for bridge, first, second in rig.nvlink:
        if max(first, second) >= len(rig.gpus):
            problems.append(
                Problem("nvlink", "error", f"{bridge.name}: no GPU {max(first, second)}.", "")
            )
            continue
        a, b = rig.gpus[first], rig.gpus[second]
        fits = bridge.text("gpus").split(";")
        for gpu in (a, b):
            if gpu.accelerator.id not in fits:
                problems.append(
                    Problem(
                        "nvlink",
                        "error",
                        f"{bridge.name} does not fit {gpu.label}; it fits {', '.join(fits)}.",
                        "Use the bridge made for this card, or run over PCIe (no NVLink).",
                    )
                )
        spacing = int(bridge.number("slot_spacing"))
        if a.riser is None and b.riser is None and abs(a.slot - b.slot) != spacing:
            problems.append(
                Problem(
                    "nvlink",
                    "error",
                    f"{bridge.name} spans {spacing} slot pitches; GPUs {first} and {second} are "
                    f"{abs(a.slot - b.slot)} apart (slots {a.slot} and {b.slot}).",
                    f"Put the cards {spacing} slots apart or use the matching bridge length.",
                )
            )
    return problems


def check_cooling(rig: Rig, load: PowerBreakdown) -> list[Problem]:
    """All electrical power becomes heat; compare with what the case and coolers move."""
    problems = []
    if rig.case is not None:
        capacity = rig.case.cooling_capacity_watts
        capacity += sum(c.number("capacity_w") for c in rig.cooling if c.text("kind") != "cpu-air")
        if load.wall_watts > capacity:
            problems.append(
                Problem(
                    "cooling",
                    "warning",
                    f"About {load.wall_watts:.0f} W of heat; {rig.case.name} and the coolers move "
                    f"about {capacity:.0f} W: GPUs will throttle.",
                    "Add case fans, move to an open frame or rack chassis, water-cool, or "
                    "power-limit the GPUs.",
                )
            )
    on_board = sorted((g for g in rig.gpus if g.riser is None), key=lambda g: g.slot)
    for upper, lower in itertools.pairwise(on_board):
        open_air = parts.gpu_cooler(upper.accelerator.id) == "open-air"
        touching = upper.slot + math.ceil(upper.slot_width) == lower.slot
        if open_air and touching and not upper.water_block:
            problems.append(
                Problem(
                    "cooling",
                    "warning",
                    f"{upper.label} draws air right against {lower.label} (no gap): open-air "
                    "coolers starve and throttle.",
                    "Leave a free slot between cards, use blower cards, or risers.",
                )
            )
    return problems
