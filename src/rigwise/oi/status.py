"""What the store says now: latched alarms, latest readings, health, exchanges, experiments.

Read-only over the event log and series (the CLI's ``status``/``alarms`` and the web page)."""

from __future__ import annotations

from typing import Any

from rigwise.oi.store import Store

CHART_SERIES = (
    "level",
    "reservoir",
    "temperature",
    "ph",
    "glucose",
    "lactate",
    "spike_rate",
    "health",
    "dosed_ml",
    "heater",
)


def alarm_history(store: Store) -> list[dict[str, Any]]:
    """Every alarm ever latched, with when it cleared and when it was acknowledged."""
    rows: dict[tuple[str, str, float], dict[str, Any]] = {}
    for ev in store.events(("alarm_latched", "alarm_cleared", "alarm_acked")):
        key = (ev.data["kind"], ev.data["device"], float(ev.data["latched_at_s"]))
        if ev.kind == "alarm_latched":
            rows[key] = {
                "kind": ev.data["kind"],
                "device": ev.data["device"],
                "value": ev.data["value"],
                "message": ev.data["message"],
                "latched_at_s": ev.t_s,
                "cleared_at_s": None,
                "acked_at_s": None,
                "rule_version": ev.rule_version,
                "latched": True,
            }
        elif key in rows and ev.kind == "alarm_cleared":
            rows[key]["cleared_at_s"] = ev.t_s
        elif key in rows and ev.kind == "alarm_acked":
            rows[key].update(acked_at_s=ev.t_s, latched=False)
    return list(rows.values())


def latched_alarms(store: Store) -> list[dict[str, Any]]:
    return [a for a in alarm_history(store) if a["latched"]]


def latest(store: Store) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for name in store.series_names():
        points = store.series(name, limit=1)
        out[name] = points[-1][1] if points else None
    return out


def status(store: Store) -> dict[str, Any]:
    last = store.last_event()
    latched = latched_alarms(store)
    values = latest(store)
    health = values.get("health")
    display = "ALARM" if latched else ("UNKNOWN" if health is None else f"{health:.0f}")
    exchanges = len(store.events(("exchange_done",)))
    experiments = store.db.execute(
        "SELECT state, COUNT(*) FROM experiments GROUP BY state"
    ).fetchall()
    return {
        "store": store.path,
        "last_event_t_s": None if last is None else last.t_s,
        "health_index": display,
        "latched_alarms": latched,
        "latest": values,
        "exchanges_done": exchanges,
        "doses": len(store.events(("dose_done",))),
        "unconfirmed_doses": len(store.events(("dose_unconfirmed",))),
        "experiments": {state: count for state, count in experiments},
        "calibrations": store.calibrations(),
    }


def charts_data(store: Store, since_s: float = -1e18) -> dict[str, list[list[float]]]:
    return {name: [[t, v] for t, v in store.series(name, since_s)] for name in CHART_SERIES}


def ack(store: Store, what: str = "all", by: str = "operator") -> dict[str, Any]:
    """Acknowledge latched alarms in the store (a running controller picks the ack up at its next
    step). An alarm whose condition is still present is refused, never released."""
    history = alarm_history(store)
    known = {a["kind"] for a in history} | {f"{a['kind']}:{a['device']}" for a in history}
    if what not in known | {"all"}:  # 'occlusion:bogus' acknowledged nothing and exited 0
        from rigwise.errors import InputError, closest, shown_value

        raise InputError(
            f"No alarm {shown_value(what)} in this store.",
            hint=f"Did you mean: {', '.join(closest(what[:200], sorted(known | {'all'})))}?",
        )
    last = store.last_event()
    t_s = 0.0 if last is None else last.t_s
    released, refused = [], []
    for alarm in latched_alarms(store):
        if what not in ("all", alarm["kind"], f"{alarm['kind']}:{alarm['device']}"):
            continue
        data = {
            k: alarm[k]
            for k in ("kind", "device", "value", "message", "latched_at_s", "cleared_at_s")
        }
        if alarm["cleared_at_s"] is None:
            store.append(
                "ack_refused", t_s, {**data, "by": by, "reason": "condition still present"}
            )
            refused.append(alarm)
        else:
            store.append("alarm_acked", t_s, {**data, "acked_at_s": t_s, "by": by})
            released.append(alarm)
    return {"released": released, "refused": refused}
