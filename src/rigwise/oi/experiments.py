"""A Neuroplatform-like experiment queue: experiments as YAML, admission, exclusive electrode
leases, a lifecycle (queued -> admitted -> running -> completed | failed | cancelled), clean-up
in ``finally`` (stimulation off, lease released) and results bundled with provenance.

Admission refuses a unit with a latched alarm, a health index under ``admission_min_health``
(or UNKNOWN), or during a maintenance window (an exchange in progress). Leases are rows with a
(mea, electrode) primary key, so SQLite itself refuses a second holder.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from typing import Any, Literal

from pydantic import ConfigDict, Field, model_validator

from rigwise import __version__
from rigwise.errors import InputError
from rigwise.file_model import FileModel
from rigwise.oi.constants import Constants
from rigwise.oi.health import HEALTH_RULES_VERSION
from rigwise.oi.interlocks import RULES_VERSION
from rigwise.oi.mea import Mea, detect_spikes
from rigwise.oi.store import Store
from rigwise.validate_input import load_yaml, validated

FINAL = ("completed", "failed", "cancelled")
MIN_WINDOW_S = 1e-3  # the spike detector's refractory period; a shorter window holds ~no samples


class Stimulation(FileModel):
    model_config = ConfigDict(extra="forbid")
    waveform: Literal["biphasic"] = "biphasic"
    charge_balanced: bool = True
    amplitude_ua: float = Field(gt=0, description="Current per phase, microamps")
    phase_us: float = Field(gt=0, description="Duration of each phase, microseconds")
    frequency_hz: float = Field(gt=0)
    pulses: int = Field(ge=1, le=100_000)


# Organoids, MEAs, housings and modules are named ``name@vN``: a new version of a unit (a
# re-seeded organoid, a re-coated MEA, a re-flashed I/O card) is a new identity in every result.
IDENTITY = r"^[a-z0-9][a-z0-9._-]{0,63}@v[0-9]{1,6}$"


class ExperimentSpec(FileModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=80)
    organoid: str = Field(pattern=IDENTITY, description="Versioned identity, e.g. org-7@v2")
    mea: str = Field(pattern=IDENTITY, description="Versioned identity of the MEA, e.g. mea-1@v1")
    housing: str | None = Field(
        default=None, pattern=IDENTITY, description="Versioned identity of the housing (h-3@v1)"
    )
    modules: dict[str, str] = Field(
        default_factory=dict,
        description="Hardware modules in the loop (pump, I/O card, ...) by versioned identity",
    )
    electrodes: list[int] = Field(min_length=1)
    stimulation: Stimulation | None = None
    recording_windows_s: list[tuple[float, float]] = Field(min_length=1)
    max_duration_s: float = Field(gt=0, le=24 * 3600)

    @model_validator(mode="after")
    def _windows(self) -> ExperimentSpec:
        bad = [f"{k}: {v}" for k, v in self.modules.items() if not re.fullmatch(IDENTITY, v)]
        if bad:
            raise ValueError(f"modules need versioned identities like pump-2@v3 ({bad[0]})")
        if len(set(self.electrodes)) != len(self.electrodes):
            raise ValueError("electrodes must be distinct")
        for start, end in self.recording_windows_s:
            if not 0 <= start < end <= self.max_duration_s:
                raise ValueError(f"recording window ({start}, {end}) must lie in 0..max_duration_s")
            if end - start < MIN_WINDOW_S:  # no sample in it: a spike count of 0 that means nothing
                raise ValueError(
                    f"recording window ({start:g}, {end:g}) is shorter than 1 ms; make it longer"
                )
        return self


def validate(c: Constants, spec: ExperimentSpec) -> None:
    """Safety caps from the constants file (charge per phase = amplitude x phase width)."""
    problems = []
    count = int(c["mea_electrodes"])
    bad = [e for e in spec.electrodes if not 0 <= e < count]
    if bad:
        shown = ", ".join(map(str, bad[:8])) + (
            f" and {len(bad) - 8:,} more" if len(bad) > 8 else ""
        )
        problems.append(f"electrodes [{shown}] outside 0..{count - 1}")
    s = spec.stimulation
    if s is not None:
        charge_nc = s.amplitude_ua * s.phase_us / 1000.0
        caps = (("amplitude_ua", s.amplitude_ua, c["stim_max_amplitude_ua"]),
                ("phase_us", s.phase_us, c["stim_max_phase_us"]),
                ("frequency_hz", s.frequency_hz, c["stim_max_frequency_hz"]),
                ("charge per phase (nC)", charge_nc, c["stim_max_charge_nc"]))  # fmt: skip
        problems += [f"{n} {v:g} above the cap {cap:g}" for n, v, cap in caps if v > cap]
        if not s.charge_balanced:
            problems.append("stimulation must be charge-balanced")
        if s.pulses / s.frequency_hz > spec.max_duration_s:
            problems.append("the pulse train is longer than max_duration_s")
    if problems:
        raise InputError(
            f"Experiment {spec.name!r} is not safe to run: {'; '.join(problems)}.",
            hint="Lower the values to the caps in oi/data/plant.yaml.",
        )


def parse_spec(c: Constants, text: str) -> ExperimentSpec:
    spec = validated(
        ExperimentSpec,
        load_yaml(text, "The experiment file"),
        "Bad experiment file",
        "See docs/oi.md, section Experiments, for the fields.",
    )
    validate(c, spec)
    return spec


# -- the queue -------------------------------------------------------------------------------
def submit(store: Store, c: Constants, text: str, t_s: float) -> str:
    spec = parse_spec(c, text)
    digest = hashlib.sha256(spec.model_dump_json().encode()).hexdigest()[:8]
    count = store.db.execute("SELECT COUNT(*) FROM experiments").fetchone()[0]
    exp_id = f"exp-{count + 1}-{digest}"
    store.db.execute(
        "INSERT INTO experiments (id, state, spec, submitted_s) VALUES (?, ?, ?, ?)",
        (exp_id, "queued", spec.model_dump_json(), t_s),
    )
    store.append("experiment_queued", t_s, {"id": exp_id, "name": spec.name})
    return exp_id


def get(store: Store, exp_id: str) -> dict[str, Any]:
    row = store.db.execute(
        "SELECT id, state, spec, result, submitted_s, reason FROM experiments WHERE id = ?",
        (exp_id,),
    ).fetchone()
    if row is None:
        ids = [r[0] for r in store.db.execute("SELECT id FROM experiments")]
        from rigwise.errors import closest, shown_value

        raise InputError(
            f"No experiment {shown_value(exp_id)}.",  # bounded: the id was echoed whole
            hint=f"Known: {', '.join(closest(exp_id[:200], ids)) or 'none'}.",
        )
    return {
        "id": row[0],
        "state": row[1],
        "spec": json.loads(row[2]),
        "result": json.loads(row[3]) if row[3] else None,
        "submitted_s": row[4],
        "reason": row[5],
    }


def listing(store: Store) -> list[dict[str, Any]]:
    ids = [r[0] for r in store.db.execute("SELECT id FROM experiments ORDER BY submitted_s, id")]
    return [{k: v for k, v in get(store, i).items() if k != "result"} for i in ids]


def _set_state(store: Store, exp_id: str, state: str, t_s: float, reason: str = "") -> None:
    store.db.execute(
        "UPDATE experiments SET state = ?, reason = ? WHERE id = ?", (state, reason, exp_id)
    )
    store.append(f"experiment_{state}", t_s, {"id": exp_id, "reason": reason})


def cancel(store: Store, exp_id: str, t_s: float) -> dict[str, Any]:
    exp = get(store, exp_id)
    if exp["state"] in FINAL:
        raise InputError(
            f"Experiment {exp_id} is already {exp['state']}.",
            hint="Only queued or admitted experiments can be cancelled.",
        )
    _set_state(store, exp_id, "cancelled", t_s, "cancelled by the operator")
    release(store, exp_id)
    return get(store, exp_id)


# -- admission and leases -----------------------------------------------------------------------
def admission(c: Constants, latched: list[Any], health: float | None, exchange_open: bool) -> str:
    """Why a unit cannot take an experiment now ('' when it can)."""
    if latched:
        return f"alarm latched: {', '.join(sorted(str(a) for a in latched))}"
    if health is None:
        return "health index UNKNOWN"
    if health < c["admission_min_health"]:
        return f"health index {health:.0f} under {c['admission_min_health']:g}"
    if exchange_open:
        return "maintenance window: a media exchange is in progress"
    return ""


def lease(store: Store, mea: str, electrodes: list[int], exp_id: str) -> str:
    """Take every electrode or none; returns '' or why not."""
    try:
        store.db.execute("BEGIN IMMEDIATE")
        store.db.executemany(
            "INSERT INTO leases VALUES (?, ?, ?)", [(mea, e, exp_id) for e in electrodes]
        )
        store.db.execute("COMMIT")
    except sqlite3.IntegrityError:
        store.db.execute("ROLLBACK")
        holders = store.db.execute(
            f"SELECT DISTINCT experiment_id FROM leases WHERE mea = ? AND electrode IN "
            f"({','.join('?' * len(electrodes))})",
            [mea, *electrodes],
        ).fetchall()
        return f"electrodes held by {', '.join(h[0] for h in holders)}"
    return ""


def release(store: Store, exp_id: str) -> None:
    store.db.execute("DELETE FROM leases WHERE experiment_id = ?", (exp_id,))


def holders(store: Store) -> list[tuple[str, int, str]]:
    return [
        tuple(r)
        for r in store.db.execute(
            "SELECT * FROM leases WHERE mea NOT LIKE 'pump:%' ORDER BY mea, electrode"
        )
    ]


# -- running ---------------------------------------------------------------------------------
def execute(
    store: Store, c: Constants, exp_id: str, mea: Mea, t_s: float, provenance: dict[str, Any]
) -> dict[str, Any]:
    """Run one admitted experiment; stimulation off and the lease released whatever happens."""
    exp = get(store, exp_id)
    spec = ExperimentSpec.model_validate(exp["spec"])
    _set_state(store, exp_id, "running", t_s)
    try:
        if spec.stimulation is not None:
            mea.stimulate(spec.electrodes, spec.stimulation.model_dump())
            store.append("stimulation_on", t_s, {"id": exp_id, **spec.stimulation.model_dump()})
        windows = []
        for start, end in spec.recording_windows_s:
            traces = mea.record(spec.electrodes, end - start)
            counts = {
                str(e): detect_spikes(tr, c["spike_threshold_sigma"])
                for e, tr in zip(spec.electrodes, traces, strict=True)
            }
            windows.append({"start_s": start, "end_s": end, "spike_counts": counts})
        result = {
            "windows": windows,
            "provenance": provenance,
            "environment": {
                n: store.series(n, t_s - 3600.0)[-60:] for n in ("temperature", "ph", "health")
            },
        }
        store.db.execute(
            "UPDATE experiments SET result = ? WHERE id = ?", (json.dumps(result), exp_id)
        )
        _set_state(store, exp_id, "completed", t_s)
    except Exception as exc:  # any failure of the run is the experiment's result, not a crash
        _set_state(store, exp_id, "failed", t_s, f"{type(exc).__name__}: {exc}")
    finally:
        mea.stop()
        store.append("stimulation_off", t_s, {"id": exp_id})
        release(store, exp_id)
    return get(store, exp_id)


def provenance(c: Constants, calibration_ids: list[str], spec: dict[str, Any]) -> dict[str, Any]:
    blob = json.dumps({"constants": c.digest(), "spec": spec}, sort_keys=True)
    return {
        "rigwise": __version__,
        "interlock_rules": RULES_VERSION,
        "health_rules": HEALTH_RULES_VERSION,
        "constants": c.digest(),
        "calibrations": calibration_ids,
        "organoid": spec.get("organoid"),
        "mea": spec.get("mea"),
        "housing": spec.get("housing"),
        "modules": spec.get("modules", {}),
        "configuration_hash": hashlib.sha256(blob.encode()).hexdigest()[:16],
    }


def try_next(
    store: Store,
    c: Constants,
    mea: Mea,
    t_s: float,
    latched: list[Any],
    health: float | None,
    exchange_open: bool,
    calibration_ids: list[str],
) -> str:
    """Admit and run the oldest queued experiment if the unit allows; returns its id or ''."""
    row = store.db.execute(
        "SELECT id, spec FROM experiments WHERE state = 'queued' ORDER BY submitted_s, id LIMIT 1"
    ).fetchone()
    if row is None:
        return ""
    exp_id, spec = row[0], json.loads(row[1])
    why = admission(c, latched, health, exchange_open) or lease(
        store, spec["mea"], spec["electrodes"], exp_id
    )
    if why:
        store.db.execute("UPDATE experiments SET reason = ? WHERE id = ?", (why, exp_id))
        return ""
    _set_state(store, exp_id, "admitted", t_s)
    execute(store, c, exp_id, mea, t_s, provenance(c, calibration_ids, spec))
    return str(exp_id)


def recover(store: Store, t_s: float) -> int:
    """After a restart: experiments left running or admitted failed with the controller; their
    stimulation is off (the MEA was reset) and their leases are released."""
    rows = store.db.execute(
        "SELECT id FROM experiments WHERE state IN ('running', 'admitted')"
    ).fetchall()
    for (exp_id,) in rows:
        _set_state(store, exp_id, "failed", t_s, "the controller restarted during the run")
        release(store, exp_id)
    return len(rows)
