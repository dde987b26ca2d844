"""Restart from the event log: latched alarms, the open exchange, dose counters and the ledger.

A dose intent without its ``dose_done`` is one whose outcome is unknown (the controller died
between logging and confirming). It is counted as delivered and marked ``dose_unconfirmed``: the
level sensor's next reading reconciles the ledger, and the scheduler never re-issues it.
"""

from __future__ import annotations

from rigwise.oi.controller import Controller, alarm_from_data
from rigwise.oi.interlocks import Alarm
from rigwise.oi.scheduler import Dose


def restore_alarms(controller: Controller) -> list[Alarm]:
    alarms: dict[str, Alarm] = {}
    for ev in controller.store.events(("alarm_latched", "alarm_cleared", "alarm_acked")):
        key = f"{ev.data['kind']}:{ev.data['device']}"
        if ev.kind == "alarm_latched":
            alarms[key] = alarm_from_data(ev.data)
        elif ev.kind == "alarm_cleared" and key in alarms:
            alarms[key] = alarm_from_data({**ev.data, "latched_at_s": alarms[key].latched_at_s})
        elif ev.kind == "alarm_acked":
            alarms.pop(key, None)
    controller.book.restore(list(alarms.values()))
    return controller.book.latched


def resume(controller: Controller) -> dict[str, int]:
    """Rebuild ``controller`` from its store; returns what was found."""
    store, sched = controller.store, controller.scheduler
    events = store.events(("exchange_started", "exchange_done", "dose_intent", "dose_done"))
    done_ids = {e.data["dose_id"] for e in events if e.kind == "dose_done"}
    open_exchange = None
    unconfirmed = 0
    for ev in events:
        if ev.kind == "exchange_started":
            open_exchange = ev.data["exchange_id"]
            sched.open(open_exchange, ev.t_s, float(ev.data["volume_ml"]))
        elif ev.kind == "exchange_done":
            open_exchange = None
            sched.close(ev.t_s)
        elif ev.kind == "dose_intent":
            pump = "feed" if ev.data["pump"] == "recycle" else ev.data["pump"]
            dose = Dose(pump, float(ev.data["ml"]), int(ev.data["exchange_id"]))
            sched.record(dose, ev.t_s)
            controller._account(dose)
            controller.next_dose_id = max(controller.next_dose_id, int(ev.data["dose_id"]) + 1)
            if ev.data["dose_id"] not in done_ids:
                unconfirmed += 1
                store.append(
                    "dose_unconfirmed",
                    ev.t_s,
                    {
                        "dose_id": ev.data["dose_id"],
                        "assumed_ml": ev.data["ml"],
                        "why": "intent logged, no confirmation: counted as delivered, not repeated",
                    },
                )
    if open_exchange is None:
        sched.current = None
    first = store.events(limit=1)
    if first:
        controller.start_s = min(controller.start_s, first[0].t_s)
    restore_alarms(controller)
    store.append(
        "controller_resumed",
        controller.clock.now(),
        {
            "open_exchange": open_exchange,
            "unconfirmed_doses": unconfirmed,
            "latched_alarms": len(controller.book.alarms),
        },
    )
    return {
        "events": len(events),
        "unconfirmed_doses": unconfirmed,
        "open_exchange": int(open_exchange or 0),
    }
