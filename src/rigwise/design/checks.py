"""Rig compatibility checks, part 1: CPU/board/RAM fit, slots, card widths, case, PCIe lanes.

Every rule returns ``Problem`` rows (severity error | warning | info) with a fix; the power,
connector, circuit, NVLink and cooling rules live in ``checks_power``. ``check_rig`` runs them
all and returns a ``RigCheck`` with the verdict, the lane budget table and the power figures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from rigwise.design import parts
from rigwise.design.rigfile import PlacedGpu, Rig
from rigwise.serialize import JsonObject
from rigwise.units import format_bytes


@dataclass(frozen=True)
class Problem(JsonObject):
    check: str  # slots | width | case | lanes | cpu | ram | psu | transients | connectors | ...
    severity: str  # error | warning | info
    message: str
    fix: str = ""


@dataclass(frozen=True)
class LaneRow(JsonObject):
    device: str
    lanes: int
    source: str  # cpu | chipset | switch | board


@dataclass(frozen=True)
class LaneBudget:
    cpu_lanes: int
    used_cpu_lanes: int
    rows: tuple[LaneRow, ...] = field(default=())

    @property
    def remaining(self) -> int:
        return self.cpu_lanes - self.used_cpu_lanes

    def to_dict(self) -> dict[str, Any]:
        return {
            "cpu_lanes": self.cpu_lanes,
            "used_cpu_lanes": self.used_cpu_lanes,
            "remaining": self.remaining,
            "rows": [r.to_dict() for r in self.rows],
        }


def covered_positions(gpu: PlacedGpu) -> range:
    """Slot pitches a card's cooler covers; cards on risers cover none of the board."""
    if gpu.riser is not None:
        return range(0)
    return range(gpu.slot, gpu.slot + math.ceil(gpu.slot_width - 1e-9))


def check_platform(rig: Rig) -> list[Problem]:
    board, cpu = rig.motherboard, rig.cpu
    problems = []
    if cpu.socket != board.socket:
        problems.append(
            Problem(
                "cpu",
                "error",
                f"{cpu.name} is socket {cpu.socket}; {board.name} takes {board.socket}.",
                f"Pick a {board.socket} CPU or a {cpu.socket} board.",
            )
        )
    if rig.cpu_count > board.cpu_sockets:
        problems.append(
            Problem(
                "cpu",
                "error",
                f"{rig.cpu_count} CPUs on a {board.cpu_sockets}-socket board.",
                f"Set cpu_count to {board.cpu_sockets}.",
            )
        )
    elif rig.cpu_count < board.cpu_sockets:
        problems.append(
            Problem(
                "cpu",
                "warning",
                f"{rig.cpu_count} of {board.cpu_sockets} sockets filled: slots and DIMMs wired "
                "to the empty socket do not work.",
                "Fill both sockets or check the manual's slot-to-CPU map.",
            )
        )
    return problems + _check_ram_fit(rig)


def _check_ram_fit(rig: Rig) -> list[Problem]:
    board, ram = rig.motherboard, rig.ram
    problems = []
    if ram.type != board.ram_type:
        problems.append(
            Problem(
                "ram",
                "error",
                f"{ram.name} is {ram.type}; {board.name} takes {board.ram_type}.",
                f"Use {board.ram_type} modules.",
            )
        )
    if rig.ram_count > board.ram_slots:
        problems.append(
            Problem(
                "ram",
                "error",
                f"{rig.ram_count} DIMMs but the board has {board.ram_slots} slots.",
                f"Use at most {board.ram_slots} larger modules.",
            )
        )
    if rig.ram_bytes > board.max_ram_bytes:
        problems.append(
            Problem(
                "ram",
                "error",
                f"{format_bytes(rig.ram_bytes)} RAM exceeds the board's maximum "
                f"{format_bytes(board.max_ram_bytes)}.",
                "Use fewer or smaller modules.",
            )
        )
    return problems


def check_slots(rig: Rig) -> list[Problem]:
    """Each GPU in a real slot, mechanically fitting, wired wide enough; no two per slot."""
    problems: list[Problem] = []
    board = rig.motherboard
    taken: dict[int, str] = {}
    for gpu in rig.gpus:
        slot = board.slot(gpu.slot)
        if slot is None:
            positions = ", ".join(str(s.position) for s in board.slots)
            problems.append(
                Problem(
                    "slots",
                    "error",
                    f"{gpu.label}: {board.name} has no slot {gpu.slot}.",
                    f"Use one of slots {positions}.",
                )
            )
            continue
        if gpu.slot in taken:
            problems.append(
                Problem(
                    "slots",
                    "error",
                    f"{gpu.label} and {taken[gpu.slot]} are both in slot {gpu.slot}.",
                    "Give each card its own slot.",
                )
            )
        taken[gpu.slot] = gpu.label
        problems += _slot_fit(gpu, slot)
    return problems


def _slot_fit(gpu: PlacedGpu, slot: parts.Slot) -> list[Problem]:
    problems = []
    if slot.physical_lanes < gpu.lanes and gpu.riser is None:
        problems.append(
            Problem(
                "slots",
                "error",
                f"{gpu.label}: a x{gpu.lanes} card does not fit the "
                f"x{slot.physical_lanes}-size slot.",
                "Use a x16-size slot or a riser.",
            )
        )
    if slot.electrical_lanes < gpu.lanes:
        where = " from the chipset (shared uplink)" if slot.chipset else ""
        problems.append(
            Problem(
                "slots",
                "warning",
                f"{gpu.label}: the x{slot.physical_lanes}-size slot is wired "
                f"x{slot.electrical_lanes}"
                f"{where}: host link at {slot.electrical_lanes}/{gpu.lanes} of the card's "
                "bandwidth (slower loading, tensor-parallel and offload traffic).",
                "Move the card to a slot wired x16, or accept it for layer-split inference.",
            )
        )
    riser_gen = int(gpu.riser.number("max_gen", 5)) if gpu.riser else 99
    link_gen = min(slot.gen, gpu.accelerator.pcie_gen or slot.gen)
    if riser_gen < link_gen:
        problems.append(
            Problem(
                "slots",
                "warning",
                f"{gpu.label}: riser {gpu.riser.name if gpu.riser else ''} is rated PCIe "
                f"{riser_gen} on a PCIe {link_gen} link (errors, link drops).",
                f"Set the slot to Gen{riser_gen} in the BIOS or use a Gen{link_gen} riser.",
            )
        )
    return problems


def check_widths(rig: Rig) -> list[Problem]:
    """A card's cooler covers the next slot pitches; nothing else may sit there."""
    problems = []
    occupants = {g.slot: g.label for g in rig.gpus if g.riser is None}
    occupants.update({int(slot): card.name for card, slot in rig.network if slot.isdigit()})
    for gpu in rig.gpus:
        covered = covered_positions(gpu)
        for position in covered[1:]:
            if position in occupants:
                width = f"{gpu.slot_width:g}-slot"
                problems.append(
                    Problem(
                        "width",
                        "error",
                        f"{gpu.label} is {width} and covers slots {covered[0]}-{covered[-1]}; "
                        f"{occupants[position]} in slot {position} collides with it.",
                        f"Move it to slot {covered[-1] + 1} or lower, mount it on a riser, or "
                        "use narrower (blower, water-blocked) cards.",
                    )
                )
    return problems


def check_case(rig: Rig) -> list[Problem]:
    if rig.case is None:
        return [Problem("case", "info", "No case given: open frame assumed.", "")]
    case, board = rig.case, rig.motherboard
    problems = []
    if board.form_factor not in case.form_factors:
        problems.append(
            Problem(
                "case",
                "error",
                f"{case.name} does not take a {board.form_factor} board.",
                f"Pick a case for {board.form_factor} (e.g. an open frame).",
            )
        )
    lowest = max((c[-1] for g in rig.gpus if (c := covered_positions(g))), default=0)
    if lowest > case.expansion_slots:
        problems.append(
            Problem(
                "case",
                "error",
                f"The cards reach slot pitch {lowest}; {case.name} has {case.expansion_slots} "
                "expansion slots.",
                "Use a case with more expansion slots, an open frame, or risers.",
            )
        )
    return problems


def lane_budget(rig: Rig) -> LaneBudget:
    """CPU lanes against GPUs, NVMe and NICs (the seed-003 allocation table)."""
    board = rig.motherboard
    rows: list[LaneRow] = []
    for gpu in rig.gpus:
        slot = board.slot(gpu.slot)
        if slot is None:
            continue
        source = "chipset" if slot.chipset else ("switch" if board.switch_uplink_lanes else "cpu")
        rows.append(LaneRow(gpu.label, min(gpu.lanes, slot.electrical_lanes), source))
    nvme_lanes = int(parts.rule("nvme_lanes"))
    for drive, count, attach in rig.storage:
        lanes = int(drive.number("pcie_lanes"))
        if lanes:
            source = "cpu" if attach == "cpu" else "chipset"
            if attach.isdigit():
                adapter_slot = board.slot(int(attach))
                source = "chipset" if adapter_slot is None or adapter_slot.chipset else "cpu"
            rows += [LaneRow(drive.name, lanes or nvme_lanes, source) for _ in range(count)]
    for card, slot_text in rig.network:
        if slot_text.isdigit():
            slot = board.slot(int(slot_text))
            source = "chipset" if slot is not None and slot.chipset else "cpu"
            wired = slot.electrical_lanes if slot else 0
            rows.append(LaneRow(card.name, min(int(card.number("pcie_lanes")), wired), source))
        else:
            rows.append(LaneRow(card.name, 0, "board"))
    cpu_lanes = rig.cpu.pcie_lanes * min(rig.cpu_count, board.cpu_sockets)
    used = sum(r.lanes for r in rows if r.source == "cpu")
    behind_switch = sum(r.lanes for r in rows if r.source == "switch")
    used += min(behind_switch, board.switch_uplink_lanes)
    return LaneBudget(cpu_lanes=cpu_lanes, used_cpu_lanes=used, rows=tuple(rows))


def check_lanes(rig: Rig, budget: LaneBudget) -> list[Problem]:
    problems = []
    if budget.remaining < 0:
        problems.append(
            Problem(
                "lanes",
                "error",
                f"Devices want {budget.used_cpu_lanes} CPU lanes; {rig.cpu_count}x {rig.cpu.name} "
                f"gives {budget.cpu_lanes}: the board will drop slots to narrower links or "
                "disable some.",
                "Use fewer devices, move NVMe to chipset M.2, or pick a CPU with more lanes "
                "(Threadripper PRO / EPYC: 128).",
            )
        )
    switch_rows = sum(r.lanes for r in budget.rows if r.source == "switch")
    uplink = rig.motherboard.switch_uplink_lanes
    if uplink and switch_rows > uplink:
        problems.append(
            Problem(
                "lanes",
                "info",
                f"{switch_rows} slot lanes share {uplink} CPU lanes through PCIe switches "
                f"({switch_rows / uplink:.1f}x oversubscribed toward the CPU; GPU-to-GPU "
                "traffic under one switch is not).",
                "",
            )
        )
    return problems
