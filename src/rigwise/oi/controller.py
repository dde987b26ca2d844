"""The control loop: read -> control -> commit, once per control period.

Each step reads every sensor, checks the previous dose's delivery against the level sensor,
evaluates the interlocks (latching new alarms), runs the temperature PID (tiered: reduce above
the band, off on a thermal alarm) and, when no alarm is latched, the next exchange sub-dose.
A dose is logged as an intent (committed to SQLite) BEFORE the pump runs and confirmed after;
``resume`` rebuilds the scheduler from the log, counting unconfirmed intents as delivered, so a
controller killed mid-exchange never doses the same volume twice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rigwise.oi.constants import Constants
from rigwise.oi.health import HealthIndex, HealthTracker
from rigwise.oi.hw import Actuator, Clock, Quality, Sensor
from rigwise.oi.interlocks import (
    RULES_VERSION,
    Alarm,
    AlarmBook,
    AlarmKind,
    Condition,
    LoopContext,
    evaluate,
)
from rigwise.oi.pid import Pid
from rigwise.oi.recycling import Ledger, Lot, RecyclePool, grade_spent
from rigwise.oi.scheduler import Dose, ExchangeScheduler
from rigwise.oi.store import Store

SERIES = (
    "level",
    "reservoir",
    "temperature",
    "ph",
    "glucose",
    "lactate",
    "osmolality",
    "spike_rate",
    "pressure",
)
CrashHook = Callable[[str], None]
OK = Quality.OK
# Delivery is judged over consecutive doses of one pump once they add up to this volume: a single
# 0.1 mL sub-dose is within a few sigma of the level sensor's noise, 0.3 mL is far outside it.
JUDGED_VOLUME_ML = 0.3


@dataclass
class PendingCheck:
    dose: Dose
    commanded_ml: float
    level_before_ml: float
    t_s: float


class Controller:
    def __init__(
        self,
        c: Constants,
        sensors: Mapping[str, Sensor],
        pumps: Mapping[str, Actuator],
        heater: Actuator,
        clock: Clock,
        store: Store,
        *,
        period_s: float = 10.0,
        recycle: bool = False,
        series_every_s: float = 600.0,
        crash_hook: CrashHook | None = None,
    ) -> None:
        self.c, self.sensors, self.pumps, self.heater = c, dict(sensors), dict(pumps), heater
        self.clock, self.store, self.period_s = clock, store, period_s
        self.book = AlarmBook()
        self.scheduler = ExchangeScheduler(c, clock.now() + c["exchange_interval_s"])
        self.pid = Pid(c["pid_kp"], c["pid_ki"], c["pid_kd"])
        self.health = HealthTracker(c)
        self.pool = RecyclePool(c, enabled=recycle)
        self.ledger = Ledger(c, c["housing_setpoint_ml"])
        self.start_s = clock.now()
        self.last_step_s: float | None = None
        self.heater_commanded: float | None = None
        self.pending: PendingCheck | None = None
        self._delivered: dict[str, tuple[float, float]] = {}  # pump -> (commanded, measured)
        self.crash_hook = crash_hook
        self.series_every_s = series_every_s
        self._next_series_s = self.start_s
        self._series: list[tuple[float, str, float | None]] = []
        self.next_dose_id = 1
        self._ack_seen_id = 0
        self.doses = 0
        self.last_index = HealthIndex("UNKNOWN", None, {})

    # -- one step --------------------------------------------------------------------------------
    def step(self) -> list[Alarm]:
        t = self.clock.now()
        gap = 0.0 if self.last_step_s is None else t - self.last_step_s
        self.last_step_s = t
        readings = {name: s.read() for name, s in self.sensors.items()}
        values = {k: (r.value if r.quality is OK else None) for k, r in readings.items()}
        ratio = self._check_delivery(values.get("level"), t)
        ctx = LoopContext(self.heater_commanded, ratio, gap, self.period_s)
        new = self._latch(t, evaluate(self.c, readings, ctx))
        level = values.get("level")
        if level is not None:  # before this step's dose: the ledger as of now
            self.ledger.reconcile(t - self.start_s, level)
        if not self.book.pumps_allowed():
            self._pumps_off()
        self._heat(values.get("temperature"), gap or self.period_s)
        if self.book.pumps_allowed() and values.get("level") is not None:
            self._exchange(t, values)
        dt = gap or self.period_s
        ok_share = sum(1 for v in values.values() if v is not None) / max(1, len(values))
        self.health.observe(values, ok_share, dt)
        self._sample(t, values)
        return new

    def _latch(self, t: float, conditions: list[Condition]) -> list[Alarm]:
        before = {k: a.condition_active for k, a in self.book.alarms.items()}
        new = self.book.update(t, conditions)
        for alarm in new:
            self.store.append("alarm_latched", t, _alarm_data(alarm), RULES_VERSION)
        for key, alarm in self.book.alarms.items():
            if before.get(key) and not alarm.condition_active:
                self.store.append("alarm_cleared", t, _alarm_data(alarm), RULES_VERSION)
        return new

    def _pumps_off(self) -> None:
        for pump in self.pumps.values():
            pump.off()
        self.pending = None  # a dose cut short by an alarm is not judged for delivery
        self._delivered.clear()

    def _heat(self, temperature: float | None, dt: float) -> None:
        if not self.book.heater_allowed():
            self.heater.off()
            self.heater_commanded = 0.0
            self.pid.reset()
            return
        if temperature is None:  # sensor faulted: hold the last duty, open loop
            self.heater.set(self.heater_commanded or 0.0)
            self.heater_commanded = self.heater.commit()
            return
        limit = 0.3 if temperature > self.c["temperature_band_high_c"] else 1.0  # tier 1
        duty = self.pid.update(self.c["temperature_setpoint_c"], temperature, dt, limit)
        self.heater.set(duty)
        self.heater_commanded = self.heater.commit()

    # -- delivery check (level before vs after a dose) -------------------------------------------
    def _check_delivery(self, level: float | None, t: float) -> float | None:
        p = self.pending
        if p is None or level is None:
            return None
        self.pending = None
        evaporated = self.c["evaporation_ml_per_day"] * (t - p.t_s) / 86400.0
        change = level - p.level_before_ml + evaporated
        delivered = change if p.dose.pump != "drain" else -change
        commanded, measured = self._delivered.get(p.dose.pump, (0.0, 0.0))
        commanded, measured = commanded + p.commanded_ml, measured + delivered
        if commanded < JUDGED_VOLUME_ML:
            self._delivered[p.dose.pump] = (commanded, measured)
            return None
        self._delivered[p.dose.pump] = (0.0, 0.0)
        ratio = measured / commanded
        self.store.append(
            "delivery_checked",
            t,
            {
                "pump": p.dose.pump,
                "commanded_ml": commanded,
                "measured_ml": measured,
                "ratio": ratio,
            },
        )
        self.health.observe_delivery(ratio)
        return ratio

    # -- the exchange -----------------------------------------------------------------------------
    def _exchange(self, t: float, values: Mapping[str, float | None]) -> None:
        level = values["level"]
        assert level is not None
        sched = self.scheduler
        if sched.due(t):
            ex_id = 1 + max(self.scheduler.completed, self._last_exchange_id())
            sched.open(ex_id, t, self.c["exchange_volume_ml"])
            self.store.append(
                "exchange_started",
                t,
                {"exchange_id": ex_id, "volume_ml": self.c["exchange_volume_ml"]},
            )
        if sched.current is None:
            return
        if sched.finished(level):
            self._finish_exchange(t, values)
            return
        capped = sched.refusals.get("rolling_cap", 0)
        dose = sched.next_dose(t, level)
        if sched.refusals.get("rolling_cap", 0) > capped:
            self.store.append("dose_refused", t, {"reason": "rolling-window volume cap"})
        if dose is not None:
            reason = self._refusal(dose, values)
            if reason:
                self.store.append(
                    "dose_refused", t, {"pump": dose.pump, "ml": dose.volume_ml, "reason": reason}
                )
            else:
                self._dose(t, dose, level)

    def _last_exchange_id(self) -> int:
        last = self.store.last_event(("exchange_started",))
        return int(last.data["exchange_id"]) if last else 0

    def _refusal(self, dose: Dose, values: Mapping[str, float | None]) -> str:
        """Why this dose must not start ('' when it may): overflow and dry-run are refused
        before the pump runs, not detected after."""
        c, level = self.c, values["level"] or 0.0
        if dose.pump == "drain":
            storage = values.get("storage")
            if storage is None or storage + dose.volume_ml > c["storage_capacity_ml"]:
                return "storage full or unknown"
            return ""
        if level + dose.volume_ml > c["housing_high_level_ml"]:
            return f"overflow: {level:.2f} + {dose.volume_ml:.2f} mL above the high level"
        reservoir = values.get("reservoir")
        if reservoir is None or reservoir - dose.volume_ml < c["reservoir_min_ml"]:
            return "reservoir too low or unknown (dry run)"
        return ""

    def _dose(self, t: float, dose: Dose, level: float) -> None:
        lot = self.pool.take(dose.volume_ml) if dose.pump == "feed" else None
        pump_name = "recycle" if lot is not None and "recycle" in self.pumps else dose.pump
        dose_id = self.next_dose_id
        self.next_dose_id += 1
        data = {
            "dose_id": dose_id,
            "pump": pump_name,
            "ml": dose.volume_ml,
            "exchange_id": dose.exchange_id,
            "lineage": _lineage(lot),
        }
        self.store.append("dose_intent", t, data)  # durable before the pump moves
        self.scheduler.record(dose, t)
        self._account(dose)
        self._hook("after_intent")
        pump = self.pumps[pump_name]
        pump.set(dose.volume_ml)
        commanded = pump.commit()
        self._hook("after_actuate")
        self.store.append("dose_done", t, {"dose_id": dose_id, "commanded_ml": commanded})
        self.doses += 1
        if lot is None and dose.pump == "feed":
            self.pool.note_fresh(dose.volume_ml)
        self.pending = PendingCheck(dose, commanded or dose.volume_ml, level, t)

    def _account(self, dose: Dose) -> None:
        if dose.pump == "drain":
            self.ledger.removed_ml += dose.volume_ml
        else:
            self.ledger.added_ml += dose.volume_ml

    def _hook(self, point: str) -> None:
        if self.crash_hook is not None:
            self.crash_hook(point)

    def _finish_exchange(self, t: float, values: Mapping[str, float | None]) -> None:
        ex = self.scheduler.current
        assert ex is not None
        grade = grade_spent(
            self.c,
            values.get("ph") or 0.0,
            values.get("glucose") or 0.0,
            values.get("lactate") or 0.0,
            values.get("osmolality") or 0.0,
        )
        lot = Lot(
            f"ex{ex.exchange_id}", ex.removed_ml, grade.grade, 0, f"exchange {ex.exchange_id}"
        )
        kept = self.pool.add_spent(lot)
        self.store.append(
            "exchange_done",
            t,
            {
                "exchange_id": ex.exchange_id,
                "removed_ml": ex.removed_ml,
                "added_ml": ex.added_ml,
                "grade": grade.grade,
                "grade_reasons": list(grade.reasons),
                "kept_for_reuse": kept,
            },
        )
        self.scheduler.close(t)

    # -- operator ---------------------------------------------------------------------------------
    def ack(self, what: str = "all", by: str = "operator") -> tuple[list[Alarm], list[Alarm]]:
        t = self.clock.now()
        released, refused = self.book.ack(t, what)
        for alarm in released:
            self.store.append("alarm_acked", t, {**_alarm_data(alarm), "by": by}, RULES_VERSION)
        for alarm in refused:
            self.store.append(
                "ack_refused",
                t,
                {**_alarm_data(alarm), "by": by, "reason": "condition still present"},
            )
        return released, refused

    def sync_acks(self) -> int:
        """Apply acks an operator wrote into the store (``rigwise oi ack``) since the last call."""
        released = 0
        for ev in self.store.events(("alarm_acked",), since_id=self._ack_seen_id):
            self._ack_seen_id = ev.id
            key = f"{ev.data['kind']}:{ev.data['device']}"
            alarm = self.book.alarms.get(key)
            if alarm is not None and not alarm.condition_active:
                del self.book.alarms[key]
                released += 1
        return released

    def safe_state(self) -> None:
        """Everything off (shutdown, watchdog, an unexpected error)."""
        self._pumps_off()
        self.heater.off()

    def index(self) -> HealthIndex:
        since = self.clock.now() - max(self.scheduler.last_exchange_done_s, self.start_s)
        self.last_index = self.health.index(bool(self.book.alarms), since)
        return self.last_index

    def _sample(self, t: float, values: Mapping[str, float | None]) -> None:
        if t < self._next_series_s:
            return
        self._next_series_s = t + self.series_every_s
        rows = [(t, name, values.get(name)) for name in SERIES if name in values]
        idx = self.index()
        rows.append((t, "health", idx.score))
        rows.append((t, "heater", self.heater_commanded))
        rows.append((t, "dosed_ml", self.ledger.added_ml))
        rows.append((t, "ledger_error_ml", self.ledger.last_error_ml))
        self._series.extend(rows)
        if len(self._series) >= 500 or self.store.path != ":memory:":
            self.flush()

    def flush(self) -> None:
        self.store.add_series(self._series)
        self._series = []


def _alarm_data(alarm: Alarm) -> dict[str, object]:
    return {
        "kind": alarm.kind.value,
        "device": alarm.device,
        "value": alarm.value,
        "message": alarm.message,
        "latched_at_s": alarm.latched_at_s,
        "cleared_at_s": alarm.cleared_at_s,
        "acked_at_s": alarm.acked_at_s,
    }


def _lineage(lot: Lot | None) -> dict[str, object]:
    if lot is None:
        return {"source": "fresh"}
    return {
        "source": "recycled",
        "lot": lot.lot_id,
        "grade": lot.grade,
        "reuse": lot.reuse_count,
        "parent": lot.parent,
    }


def alarm_from_data(data: Mapping[str, Any]) -> Alarm:
    cleared = data.get("cleared_at_s")
    return Alarm(
        AlarmKind(str(data["kind"])),
        str(data["device"]),
        float(data["value"] or 0.0),
        str(data["message"]),
        float(data["latched_at_s"]),
        condition_active=cleared is None,
        cleared_at_s=None if cleared is None else float(cleared),
    )
