"""The exchange scheduler: chemostat-like exchange of ``exchange_volume_ml`` every
``exchange_interval_s``, in sub-doses of at most ``sub_dose_cap_ml``, always removing before
adding, with a minimum gap between pump events and a rolling-window volume cap per pump.

Its counters are rebuilt from the event log after a restart (``replay``): a logged dose intent
counts as done, so a dose whose outcome is unknown is never issued twice.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from rigwise.oi.constants import Constants

TOLERANCE_ML = 0.02  # level deadband: smaller deficits are not worth a pump event
MAX_TOP_UP_ML = 0.5  # evaporation make-up allowed per exchange, beyond the removed volume


@dataclass(frozen=True)
class Dose:
    pump: str  # feed | drain
    volume_ml: float
    exchange_id: int


@dataclass
class Exchange:
    exchange_id: int
    started_s: float
    target_ml: float
    removed_ml: float = 0.0
    added_ml: float = 0.0


class ExchangeScheduler:
    def __init__(self, c: Constants, first_exchange_s: float | None = None) -> None:
        self.c = c
        self.interval_s = c["exchange_interval_s"]
        self.next_exchange_s = self.interval_s if first_exchange_s is None else first_exchange_s
        self.current: Exchange | None = None
        self.last_exchange_done_s = 0.0
        self.last_pump_s = -1e18
        self.history: dict[str, deque[tuple[float, float]]] = {}
        self.completed = 0
        self.refusals: dict[str, int] = {}

    # -- bookkeeping (also used by replay) ------------------------------------------------------
    def open(self, exchange_id: int, t_s: float, target_ml: float) -> None:
        self.current = Exchange(exchange_id, t_s, target_ml)

    def record(self, dose: Dose, t_s: float) -> None:
        """A dose intent was logged: count it (whether or not it is ever confirmed)."""
        if self.current is not None and self.current.exchange_id == dose.exchange_id:
            if dose.pump == "drain":
                self.current.removed_ml += dose.volume_ml
            else:
                self.current.added_ml += dose.volume_ml
        self.last_pump_s = t_s
        self.history.setdefault(dose.pump, deque()).append((t_s, dose.volume_ml))

    def close(self, t_s: float) -> None:
        self.current = None
        self.completed += 1
        self.last_exchange_done_s = t_s
        self.next_exchange_s = t_s + self.interval_s

    def rolling_ml(self, pump: str, t_s: float) -> float:
        events = self.history.setdefault(pump, deque())
        while events and events[0][0] < t_s - self.c["rolling_window_s"]:
            events.popleft()
        return sum(v for _, v in events)

    def _refuse(self, reason: str) -> None:
        self.refusals[reason] = self.refusals.get(reason, 0) + 1

    # -- decisions ---------------------------------------------------------------------------
    def due(self, t_s: float) -> bool:
        return self.current is None and t_s >= self.next_exchange_s

    def next_dose(self, t_s: float, level_ml: float) -> Dose | None:
        """The next sub-dose of the open exchange, or None (nothing due, gap, cap, or done)."""
        ex = self.current
        if ex is None or t_s - self.last_pump_s < self.c["min_pump_gap_s"]:
            return None
        cap = self.c["sub_dose_cap_ml"]
        deficit = self.c["housing_setpoint_ml"] - level_ml
        if ex.removed_ml < ex.target_ml - 1e-9 and deficit <= TOLERANCE_ML:
            dose = Dose("drain", min(cap, ex.target_ml - ex.removed_ml), ex.exchange_id)
        elif deficit > TOLERANCE_ML and ex.added_ml < ex.removed_ml + MAX_TOP_UP_ML:
            room = ex.removed_ml + MAX_TOP_UP_ML - ex.added_ml
            dose = Dose("feed", min(cap, deficit, room), ex.exchange_id)
        else:
            return None
        if self.rolling_ml(dose.pump, t_s) + dose.volume_ml > self.c["rolling_cap_ml"]:
            self._refuse("rolling_cap")
            return None
        return dose

    def finished(self, level_ml: float) -> bool:
        ex = self.current
        if ex is None:
            return False
        deficit = self.c["housing_setpoint_ml"] - level_ml
        topped = deficit <= TOLERANCE_ML or ex.added_ml >= ex.removed_ml + MAX_TOP_UP_ML - 1e-9
        return ex.removed_ml >= ex.target_ml - 1e-9 and topped
