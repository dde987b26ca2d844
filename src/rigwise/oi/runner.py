"""``rigwise oi run``: the controller in its loop, against the simulator or real drivers.

With the simulator, the simulated world (plant volumes, temperature, faults' effects) is kept in
the store between runs, as a real plant keeps its state while its controller restarts; the
controller itself is rebuilt from the event log (``resume``). ``RIGWISE_OI_CRASH_AT=point:n``
kills the process (SIGKILL) the n-th time the loop reaches ``point`` (``after_intent`` or
``after_actuate``): the restart tests use it to die mid-exchange for real.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from typing import Any

from rigwise.oi.constants import Constants
from rigwise.oi.controller import Controller
from rigwise.oi.experiments import recover, try_next
from rigwise.oi.faults import FaultSpec
from rigwise.oi.mea import Mea, SimMea
from rigwise.oi.ownership import claim_pumps, release_pumps
from rigwise.oi.resume import resume
from rigwise.oi.simulate import SimRig, build_sim
from rigwise.oi.store import Store

CRASH_ENV = "RIGWISE_OI_CRASH_AT"


def crash_hook_from_env() -> Any:
    spec = os.environ.get(CRASH_ENV, "")
    if not spec:
        return None
    point, _, count = spec.partition(":")
    remaining = [int(count or 1)]

    def hook(where: str) -> None:
        if where == point:
            remaining[0] -= 1
            if remaining[0] <= 0:
                os.kill(os.getpid(), signal.SIGKILL)

    return hook


@dataclass(frozen=True)
class RunSummary:
    steps: int
    sim_time_s: float
    resumed: dict[str, int]
    latched_alarms: list[str]
    health_index: str
    doses: int
    experiments_run: int


def experiments_tick(ctrl: Controller, mea: Mea) -> int:
    """Admit and run the next queued experiment when the unit allows it (1 if one ran)."""
    idx = ctrl.index()
    cal_ids = sorted(
        {
            str(getattr(getattr(p, "calibration", None), "calibration_id", ""))
            for p in ctrl.pumps.values()
        }
        - {""}
    )
    ran = try_next(
        ctrl.store,
        ctrl.c,
        mea,
        ctrl.clock.now(),
        [a.key for a in ctrl.book.latched],
        idx.score if idx.status == "OK" else None,
        ctrl.scheduler.current is not None,
        cal_ids,
    )
    return 1 if ran else 0


def run_sim(
    store: Store,
    c: Constants,
    *,
    duration_s: float,
    period_s: float,
    faults: tuple[FaultSpec, ...] = (),
    seed: int = 0,
    recycle: bool = False,
    experiments: bool = True,
) -> RunSummary:
    """Run the controller against the simulator for ``duration_s`` of simulated time."""
    rig = build_sim(
        c, faults, seed, store, period_s=period_s, recycle=recycle, crash_hook=crash_hook_from_env()
    )
    rig.plant.on_transfer = lambda: store.save_world(rig.plant.snapshot())
    world = store.load_world()
    if world is not None:
        rig.plant.restore(world)
        rig.clock.t_s = rig.plant.state.t_s
    rig.controller.start_s = rig.clock.now()
    rig.controller.last_step_s = None
    claim_pumps(store, sorted(rig.pumps), rig.clock.now())
    found = resume(rig.controller) if store.last_event() else {}
    recover(store, rig.clock.now())
    last_ack = store.last_event(("alarm_acked",))
    rig.controller._ack_seen_id = last_ack.id if last_ack else 0
    steps = round(duration_s / period_s)
    ran = 0
    mea = SimMea(lambda: rig.plant.state.spike_rate_hz, c["mea_noise_uv"], seed)
    try:
        for _ in range(steps):
            _sim_step(rig, store)
            if experiments:
                ran += experiments_tick(rig.controller, mea)
    finally:
        rig.controller.safe_state()
        store.save_world(rig.plant.snapshot())
        rig.controller.flush()
        release_pumps(store)
    return _summary(rig.controller, steps, rig.clock.now(), found, ran)


def _sim_step(rig: SimRig, store: Store) -> None:
    rig.controller.sync_acks()
    rig.controller.step()
    store.save_world(rig.plant.snapshot())  # the world moved with the step's actuation
    rig.plant.advance(rig.controller.period_s)
    rig.clock.sleep(rig.controller.period_s)


def _summary(
    ctrl: Controller, steps: int, t_s: float, found: dict[str, int], ran: int
) -> RunSummary:
    return RunSummary(
        steps,
        t_s,
        found,
        sorted(a.key for a in ctrl.book.latched),
        ctrl.index().display,
        ctrl.doses,
        ran,
    )


def run_hardware(
    store: Store, c: Constants, drivers_file: str, *, duration_s: float, period_s: float
) -> RunSummary:
    """Run the controller on real devices in real time (resuming from the log)."""
    from rigwise.oi.driver_config import build_devices, load_config
    from rigwise.oi.hw import WallClock

    clock = WallClock()
    devices = build_devices(load_config(drivers_file), clock)
    ctrl = Controller(
        c,
        devices.sensors,
        devices.pumps,
        devices.heater,
        clock,
        store,
        period_s=period_s,
        series_every_s=period_s,
    )
    claim_pumps(store, sorted(devices.pumps), clock.now())
    found = resume(ctrl) if store.last_event() else {}
    recover(store, clock.now())
    steps = round(duration_s / period_s)
    try:
        for _ in range(steps):
            started = clock.now()
            ctrl.sync_acks()
            ctrl.step()
            clock.sleep(period_s - (clock.now() - started))
    finally:
        ctrl.safe_state()
        ctrl.flush()
        release_pumps(store)
    return _summary(ctrl, steps, clock.now(), found, 0)
