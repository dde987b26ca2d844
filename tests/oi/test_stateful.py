"""Property-based (stateful) test: random fault and command sequences never produce an overflow,
a dry pump, a pump run while an alarm is latched, or a ledger error beyond tolerance."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from rigwise.oi.constants import load_constants
from rigwise.oi.faults import DEFAULT_DEVICE, FaultKind, FaultSpec
from rigwise.oi.simulate import build_sim
from rigwise.oi.store import Store

C = load_constants()
# 10 sigma of the level sensor's noise: what the ledger may not explain
LEDGER_TOLERANCE_ML = 10 * C["level_noise_ml"]
SENSORS = ["level", "reservoir", "temperature", "ph", "pressure", "bubble", "storage"]


class Maintenance(RuleBasedStateMachine):
    @initialize(seed=st.integers(0, 10_000))
    def start(self, seed: int) -> None:
        self.rig = build_sim(C, (), seed, Store(), period_s=60.0)
        self.violations: list[str] = []

    def _commits(self) -> int:
        return sum(p.commits for p in self.rig.pumps.values())

    @rule(steps=st.integers(1, 90))
    def run(self, steps: int) -> None:
        rig, ctrl = self.rig, self.rig.controller
        for _ in range(steps):
            before = self._commits()
            ctrl.step()
            if ctrl.book.alarms and self._commits() != before:
                self.violations.append(f"pump ran with {list(ctrl.book.alarms)} latched")
            rig.plant.advance(ctrl.period_s)
            rig.clock.sleep(ctrl.period_s)

    @rule(
        kind=st.sampled_from(list(FaultKind)),
        minutes=st.integers(1, 240),
        sensor=st.sampled_from(SENSORS),
    )
    def fault(self, kind: FaultKind, minutes: int, sensor: str) -> None:
        device = sensor if kind.value.startswith("sensor_") else DEFAULT_DEVICE[kind]
        spec = FaultSpec(kind, device, self.rig.clock.now(), minutes * 60.0)
        self.rig.plant.faults = (*self.rig.plant.faults, spec)

    @rule(ml=st.floats(1.5, 3.5))
    def swap_bottle(self, ml: float) -> None:
        """An operator puts a nearly empty bottle in place of the reservoir."""
        self.rig.plant.state.reservoir_ml = ml

    @rule()
    def exchange_now(self) -> None:
        sched = self.rig.controller.scheduler
        if sched.current is None:
            sched.next_exchange_s = self.rig.clock.now()

    @rule(what=st.sampled_from(["all", "occlusion", "bubble", "sensor_fault", "comms_loss"]))
    def ack(self, what: str) -> None:
        released, _ = self.rig.controller.ack(what)
        for alarm in released:
            assert not alarm.condition_active  # only cleared conditions are released

    @invariant()
    def no_overflow(self) -> None:
        s = self.rig.plant.state
        assert s.overflow_events == 0 and s.max_housing_ml <= C["housing_capacity_ml"]

    @invariant()
    def no_dry_pumping(self) -> None:
        assert self.rig.plant.state.dry_pump_events == 0

    @invariant()
    def no_actuation_under_alarm(self) -> None:
        assert not self.violations, self.violations

    @invariant()
    def ledger_within_tolerance(self) -> None:
        ledger = self.rig.controller.ledger
        assert abs(ledger.last_error_ml) <= LEDGER_TOLERANCE_ML, ledger.last_error_ml


Maintenance.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestMaintenance = Maintenance.TestCase
