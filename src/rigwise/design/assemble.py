"""Assemble a complete box around N GPUs from the parts catalog: the cheapest board, CPU, RAM,
PSU and case that pass every rig check (or the reason none does).

Greedy by price, checked by the same rules as ``rigwise rig check``: cards go into x16 slots
far enough apart for their width; when the board is too crowded they go on risers on an open
frame. RAM follows the seed-003 ratio for the task; the PSU follows the 150% rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rigwise.design import checks, checks_power, parts
from rigwise.design.checks import Problem
from rigwise.design.power import rig_power
from rigwise.design.rigcheck import rig_problems
from rigwise.design.rigfile import PlacedGpu, Rig
from rigwise.hardware import Accelerator


@dataclass(frozen=True)
class BoxRequest:
    gpu: Accelerator
    count: int
    used: bool
    task: str
    power_limit_watts: float | None
    circuit: str
    form: str | None = None  # desktop | workstation | server | rack


def _price(price: parts.Price, used: bool) -> float:
    value = price.pick(used)
    return math.inf if value is None else value


def _positions(board: parts.Motherboard, width: float, count: int) -> list[int] | None:
    """x16 CPU-wired slots, each below the previous card's cooler."""
    chosen: list[int] = []
    for slot in board.slots:
        if slot.physical_lanes < 16 or slot.chipset:
            continue
        if chosen and slot.position < chosen[-1] + math.ceil(width):
            continue
        chosen.append(slot.position)
        if len(chosen) == count:
            return chosen
    return None


def _form_ok(board: parts.Motherboard, form: str | None) -> bool:
    if form in (None, "workstation"):
        return True
    if form == "desktop":
        return board.form_factor == "atx" and board.cpu_sockets == 1
    return board.server  # server | rack


def _place(request: BoxRequest, board: parts.Motherboard) -> tuple[tuple[PlacedGpu, ...], bool]:
    """GPUs on the board, or on risers when they do not fit side by side."""
    width = request.gpu.slot_width or 2.0
    positions = _positions(board, width, request.count)
    riser = None
    if positions is None:
        x16 = [s.position for s in board.slots if s.physical_lanes >= 16 and not s.chipset]
        if len(x16) < request.count:
            return (), False
        positions = x16[: request.count]
        gen = request.gpu.pcie_gen or 4
        risers = [r for r in parts.simple_parts("risers") if r.number("max_gen") >= min(gen, 4)]
        riser = min(risers, key=lambda r: _price(r.price, request.used)) if risers else None
    limit = request.power_limit_watts or request.gpu.tdp_watts
    placed = tuple(
        PlacedGpu(
            index=i,
            accelerator=request.gpu,
            slot=position,
            riser=riser,
            water_block=False,
            power_limit_watts=min(limit, request.gpu.tdp_watts),
            slot_width=width,
            power_connectors=request.gpu.power_connectors,
        )
        for i, position in enumerate(positions)
    )
    return placed, riser is not None


def _ram_for(
    board: parts.Motherboard, vram_bytes: float, task: str, used: bool
) -> tuple[parts.RamModule, int] | None:
    key = "ram_to_vram_train" if task in ("train", "finetune") else "ram_to_vram_infer"
    wanted = vram_bytes * parts.rule(key)
    options = []
    for module in parts.ram_modules():
        if module.type != board.ram_type:
            continue
        count = max(2, math.ceil(wanted / module.module_bytes))
        if count <= board.ram_slots and count * module.module_bytes <= board.max_ram_bytes:
            options.append((_price(module.price, used) * count, module, count))
    if not options:
        return None
    _, module, count = min(options, key=lambda o: o[0])
    return module, count


def _cheapest_case(rig: Rig, used: bool, on_risers: bool) -> parts.Case | None:
    fitting = [
        c
        for c in parts.cases()
        if rig.motherboard.form_factor in c.form_factors
        and (not on_risers or c.expansion_slots >= 12)
    ]
    fitting.sort(key=lambda c: _price(c.price, used))
    load = rig_power(rig, "load")
    for case in fitting:
        trial = _replace(rig, case=case)
        found = [*checks.check_case(trial), *checks_power.check_cooling(trial, load)]
        if not any(p.severity == "error" or p.check == "cooling" for p in found):
            return case
    return fitting[-1] if fitting else None


def _replace(rig: Rig, **changes: object) -> Rig:
    from dataclasses import replace

    return replace(rig, **changes)  # type: ignore[arg-type]


def _problems(rig: Rig) -> list[Problem]:
    return list(rig_problems(rig, rig_power(rig, "load")))


def _with_psu(rig: Rig, used: bool) -> Rig | None:
    """The cheapest PSU (or pair) meeting the 150% rule, connectors and transients."""
    wanted = rig_power(rig, "load").total_watts * parts.rule("psu_headroom_factor")
    candidates = sorted(parts.psus(), key=lambda p: _price(p.price, used))
    for count in (1, 2):
        for psu in candidates:
            if psu.watts * count < wanted:
                continue
            trial = _replace(rig, psu=psu, psu_count=count)
            load = rig_power(trial, "load")
            found = [
                *checks_power.check_psu(trial, load),
                *checks_power.check_transients(trial, load),
                *checks_power.check_connectors(trial),
            ]
            if not found:
                return trial
    return None


def assemble_box(request: BoxRequest) -> tuple[Rig | None, str]:
    """The cheapest passing box for the request, or (None, reason)."""
    circuit = parts.circuits()[request.circuit]
    best: tuple[float, Rig] | None = None
    reasons = ["no board has enough x16 slots"]
    boards = [b for b in parts.motherboards() if _form_ok(b, request.form)]
    boards = [b for b in boards if not math.isinf(_floor_cost(b, request.used))]
    for board in sorted(boards, key=lambda b: _floor_cost(b, request.used)):
        if best is not None and _floor_cost(board, request.used) >= best[0]:
            break  # every later board costs more before RAM, PSU and case
        rig, why = _box_on_board(request, board, circuit)
        if rig is None:
            reasons.append(why)
            continue
        cost = _box_cost(rig, request.used)
        if best is None or cost < best[0]:
            best = (cost, rig)
    return (best[1], "") if best else (None, min(reasons, key=_reason_rank))


# When no board works, report the failure that got furthest: the box could be built but the
# wall circuit or the power supplies stop it, before slot and lane problems.
_REASON_ORDER = ("circuit", "no PSU", "connectors", "psu", "cooling", "case", "lanes", "width")


def _reason_rank(reason: str) -> int:
    for rank, prefix in enumerate(_REASON_ORDER):
        if reason.startswith(prefix):
            return rank
    return len(_REASON_ORDER)


def _box_on_board(
    request: BoxRequest, board: parts.Motherboard, circuit: dict[str, str]
) -> tuple[Rig | None, str]:
    gpus, on_risers = _place(request, board)
    if not gpus:
        return None, "no board has enough x16 slots"
    cpus = [c for c in parts.cpus() if c.socket == board.socket]
    cpus = [c for c in cpus if not math.isinf(_price(c.price, request.used))]
    if not cpus:
        return None, "no priced CPU for the board"
    cpu = min(cpus, key=lambda c: _price(c.price, request.used))
    vram = request.gpu.memory_bytes * request.count
    ram = _ram_for(board, vram, request.task, request.used)
    if ram is None:
        return None, "board cannot hold the RAM the task wants"
    rig = Rig(
        name=f"{request.count}x {request.gpu.id} on {board.id}",
        motherboard=board,
        cpu=cpu,
        cpu_count=board.cpu_sockets,
        ram=ram[0],
        ram_count=ram[1],
        psu=parts.psus()[0],
        psu_count=1,
        case=None,
        cooling=(parts.get_part("cooling", "air-tower-cpu"),),
        circuit=circuit,
        task=request.task,
        used=request.used,
        gpus=gpus,
        nvlink=(),
        storage=((parts.get_part("storage", "nvme-gen4-2tb"), 1, "cpu"),),
        network=(),
        fans=3,
    )
    powered = _with_psu(rig, request.used)
    if powered is None:
        return None, "no PSU combination powers it"
    final = _replace(powered, case=_cheapest_case(powered, request.used, on_risers))
    errors = [p for p in _problems(final) if p.severity == "error"]
    if errors:
        return None, f"{errors[0].check}: {errors[0].message}"
    return final, ""


def _floor_cost(board: parts.Motherboard, used: bool) -> float:
    """Board plus its cheapest CPUs: a lower bound on the platform's price."""
    cpus = [_price(c.price, used) for c in parts.cpus() if c.socket == board.socket]
    return _price(board.price, used) + min(cpus, default=math.inf) * board.cpu_sockets


def _box_cost(rig: Rig, used: bool) -> float:
    total = _price(rig.motherboard.price, used) + _price(rig.cpu.price, used) * rig.cpu_count
    total += (
        _price(rig.ram.price, used) * rig.ram_count + _price(rig.psu.price, used) * rig.psu_count
    )
    if rig.case is not None:
        total += _price(rig.case.price, used)
    return total
