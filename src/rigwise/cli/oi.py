"""``rigwise oi``: keep organoids alive (perfusion maintenance, interlocks, experiments).

Every subcommand takes ``--json``; bad input exits 2 with the fix; a refused acknowledgement or
an experiment refused admission exits 1 (a result, not an error).
"""

from __future__ import annotations

import click

from rigwise.cli._common import EXIT_INFEASIBLE, PORT, fail, print_json
from rigwise.cli.oi_experiments import (  # the options are shared with the experiments group
    _existing_store,
    _store,
    constants_option,
    db_option,
    experiments,
    json_option,
)
from rigwise.errors import shown_value

MAX_SOURCE_CHARS = 300  # one provenance line (balance, operator, date), stored with every fit


def _seconds(text: str, what: str) -> float:
    from rigwise.oi.faults import parse_duration

    return parse_duration(text, what)


@click.group()
def oi() -> None:
    """Organoid perfusion maintenance: simulate, run, alarms, calibration and experiments."""


@oi.command()
@click.option(
    "--days", type=float, default=30.0, show_default=True, help="Simulated days (up to 365)."
)
@click.option("--seed", type=int, default=1, show_default=True, help="Random seed of the plant.")
@click.option(
    "--fault",
    "faults",
    multiple=True,
    help="Inject a fault: KIND[:DEVICE]@START[+DURATION], e.g. occlusion@3d+6h "
    "(kinds: air_in_line, occlusion, empty_reservoir, stuck_heater, sensor_oob, "
    "sensor_nan, sensor_crc, comms_loss). Repeatable.",
)
@click.option(
    "--ack",
    "acks",
    multiple=True,
    help="An operator acknowledges all alarms at this time, e.g. 4d. Repeatable.",
)
@click.option(
    "--period",
    default="60s",
    show_default=True,
    help="Control period of the simulated loop: 1s to the heater loop's limit (97s with the "
    "packaged constants; docs/oi.md).",
)
@click.option("--recycle", is_flag=True, help="Recycle graded spent media (off by default).")
@click.option(
    "--db",
    type=click.Path(dir_okay=False),
    default=None,
    help="Keep the simulation's event log in this SQLite file (default: in memory).",
)
@constants_option
@json_option
def simulate(
    days: float,
    seed: int,
    faults: tuple[str, ...],
    acks: tuple[str, ...],
    period: str,
    recycle: bool,
    db: str | None,
    constants: str | None,
    as_json: bool,
) -> None:
    """Simulate DAYS of maintenance in seconds and report health, alarms and volumes."""
    from rigwise.oi.constants import load_constants
    from rigwise.oi.faults import parse_fault
    from rigwise.oi.simulate import simulate as run
    from rigwise.oi.store import Store

    specs = tuple(parse_fault(f) for f in faults)
    ack_s = tuple(_seconds(a, "--ack time") for a in acks)
    store = Store(db) if db else None
    report = run(
        days,
        seed,
        specs,
        ack_s,
        period_s=_seconds(period, "--period"),
        recycle=recycle,
        constants=load_constants(constants),
        store=store,
    )
    if as_json:
        print_json(report)
        return
    click.echo(
        f"{days:g} days (seed {seed}, period {report.period_s:g} s) in "
        f"{report.wall_time_s:.2f} s: health {report.health_index}"
    )
    click.echo(
        f"  housing max {report.max_housing_volume_ml:.3f} / "
        f"{report.housing_capacity_ml:g} mL; dosed {report.dosed_ml:.2f} mL, removed "
        f"{report.removed_ml:.2f} mL, ledger error {report.ledger_error_ml:.3f} mL"
    )
    click.echo(
        f"  {report.exchanges} exchanges, {report.doses} doses, {len(report.alarms)} alarm(s)"
    )
    for a in report.alarms:
        click.echo(
            f"  - {a['kind']} ({a['device']}) at {a['latched_at_s'] / 3600:.2f} h: "
            f"{a['message']}; acked: {a['acked_at_s'] is not None}"
        )


@oi.command()
@db_option
@json_option
def init(db: str | None, as_json: bool) -> None:
    """Create the O.I. store (an append-only event log) if it does not exist."""
    store = _store(db)
    if store.last_event() is None:
        store.append("store_created", 0.0, {"by": "rigwise oi init"})
    out = {"store": store.path, "events": len(store.events())}
    if as_json:
        print_json(out)
    else:
        click.echo(f"O.I. store ready: {store.path} ({out['events']} events)")


@oi.command()
@db_option
@click.option(
    "--duration",
    default="1h",
    show_default=True,
    help="How long to run (simulated time with the simulator), e.g. 30m, 2d.",
)
@click.option("--period", default="10s", show_default=True, help="Control period.")
@click.option("--fault", "faults", multiple=True, help="Simulator fault (as in `oi simulate`).")
@click.option("--seed", type=int, default=0, show_default=True, help="Simulator seed.")
@click.option(
    "--hardware",
    type=click.Path(dir_okay=False),
    default=None,
    help="Drive real devices from a drivers YAML (docs/oi.md) instead of the "
    "simulator; runs in real time.",
)
@click.option(
    "--metrics-port",
    type=PORT,
    default=None,
    help="Serve Prometheus metrics of the store on this port while running.",
)
@constants_option
@json_option
def run(
    db: str | None,
    duration: str,
    period: str,
    faults: tuple[str, ...],
    seed: int,
    hardware: str | None,
    metrics_port: int | None,
    constants: str | None,
    as_json: bool,
) -> None:
    """Run the controller (resuming from the store's event log after a restart)."""
    from rigwise.oi.constants import load_constants
    from rigwise.oi.faults import parse_fault
    from rigwise.oi.runner import run_hardware, run_sim
    from rigwise.oi.simulate import check_period, period_hint

    store = _store(db)
    c = load_constants(constants)
    duration_s, period_s = _seconds(duration, "--duration"), _seconds(period, "--period")
    if not 1.0 <= period_s <= 3600.0:
        fail(f"--period {period} is out of range.", hint=period_hint(c))
    check_period(period_s, c)  # the heater loop's sampling limit (oi/simulate.py)
    if not period_s <= duration_s <= 366 * 86400:  # under one period: no step ran, exit 0
        fail(
            f"--duration {duration} is out of range.", hint=f"Use {period} (one --period) to 366d."
        )
    if hardware and faults:
        fail("--fault injects faults into the simulator; leave it out with --hardware.")
    endpoint = None
    if metrics_port is not None:
        from rigwise.oi.metrics import serve

        endpoint = serve(store.path, metrics_port)
    try:
        if hardware:
            summary = run_hardware(store, c, hardware, duration_s=duration_s, period_s=period_s)
        else:
            specs = tuple(parse_fault(f) for f in faults)
            summary = run_sim(
                store, c, duration_s=duration_s, period_s=period_s, faults=specs, seed=seed
            )
    finally:
        if endpoint is not None:
            endpoint.stop()
    if as_json:
        print_json(summary)
    else:
        click.echo(
            f"ran {summary.steps} steps to t={summary.sim_time_s / 3600:.2f} h: health "
            f"{summary.health_index}, {summary.doses} doses, alarms "
            f"{', '.join(summary.latched_alarms) or 'none'}"
        )


@oi.command()
@db_option
@json_option
def status(db: str | None, as_json: bool) -> None:
    """Health index, latched alarms and the latest readings from the store."""
    from rigwise.oi.status import status as read_status

    out = read_status(_existing_store(db))
    if as_json:
        print_json(out)
        return
    click.echo(
        f"health: {out['health_index']}; exchanges done: {out['exchanges_done']}; "
        f"doses: {out['doses']} ({out['unconfirmed_doses']} unconfirmed)"
    )
    for a in out["latched_alarms"]:
        state = "cleared, awaiting ack" if a["cleared_at_s"] is not None else "ACTIVE"
        click.echo(f"  ALARM {a['kind']} ({a['device']}): {a['message']} [{state}]")
    for name, value in out["latest"].items():
        click.echo(f"  {name}: {'-' if value is None else f'{value:.3f}'}")


@oi.command()
@db_option
@click.option("--all", "show_all", is_flag=True, help="Include acknowledged alarms.")
@json_option
def alarms(db: str | None, show_all: bool, as_json: bool) -> None:
    """List latched alarms (every alarm with --all)."""
    from rigwise.oi.status import alarm_history

    rows = [a for a in alarm_history(_existing_store(db)) if show_all or a["latched"]]
    if as_json:
        print_json(rows)
        return
    if not rows:
        click.echo("no alarms")
    for a in rows:
        click.echo(
            f"{a['kind']:<26} {a['device']:<12} latched {a['latched_at_s']:>10.0f} s  "
            f"cleared {a['cleared_at_s'] if a['cleared_at_s'] is not None else '-'}  "
            f"acked {a['acked_at_s'] if a['acked_at_s'] is not None else '-'}"
        )


@oi.command()
@click.argument("what", default="all")
@db_option
@click.option("--by", default="operator", show_default=True, help="Who acknowledges (logged).")
@json_option
def ack(what: str, db: str | None, by: str, as_json: bool) -> None:
    """Acknowledge alarms: WHAT is `all`, a kind (occlusion) or kind:device. An alarm whose
    condition is still present stays latched (exit 1)."""
    from rigwise.oi.status import ack as do_ack

    out = do_ack(_existing_store(db), what, by)
    if as_json:
        print_json(out)
    else:
        for a in out["released"]:
            click.echo(f"released {a['kind']} ({a['device']})")
        for a in out["refused"]:
            click.echo(f"refused {a['kind']} ({a['device']}): condition still present")
    if out["refused"]:
        raise SystemExit(EXIT_INFEASIBLE)


@oi.group()
def calibrate() -> None:
    """Calibrations between raw and real units."""


@calibrate.command("pump")
@click.argument("pump", type=click.Choice(["feed", "drain", "recycle"]))
@click.option(
    "--run",
    "runs",
    multiple=True,
    required=True,
    help="A weighed run SECONDS:GRAMS, e.g. 60:1.01. Repeat for a fit.",
)
@click.option(
    "--density",
    type=float,
    default=1.007,
    show_default=True,
    help="Density of the pumped liquid, g/mL (medium ~1.007, water 0.997).",
)
@click.option(
    "--source",
    default="weighed runs",
    show_default=True,
    help="Provenance: balance, operator, date.",
)
@db_option
@json_option
def calibrate_pump(
    pump: str, runs: tuple[str, ...], density: float, source: str, db: str | None, as_json: bool
) -> None:
    """Fit PUMP's flow (mL/s) and offset from weighed runs and store it with its provenance."""
    from rigwise.oi.constants import load_constants
    from rigwise.oi.hw import WeighedRun, fit_pump_calibration
    from rigwise.validate_input import plain_number

    parsed = []
    for text in runs:
        seconds, _, grams = text.partition(":")
        try:  # plain finite numbers: float() took '1_000' as 1000 and '1e309' as inf
            parsed.append(WeighedRun(plain_number(seconds), plain_number(grams)))
        except ValueError as exc:
            fail(f"Bad --run {shown_value(text)}: {exc}. Write SECONDS:GRAMS, e.g. 60:1.01.")
    if not 0.5 <= density <= 2.0:
        fail(f"--density {density:g} g/mL is implausible. Use ~1.0 (medium 1.007, water 0.997).")
    if not source.strip() or len(source) > MAX_SOURCE_CHARS or not source.isprintable():
        fail(
            f"--source {shown_value(source)} is not a provenance line. Give one printable line "
            f"of at most {MAX_SOURCE_CHARS} characters: balance, operator, date."
        )
    c = load_constants()
    plausible = (c["pump_flow_plausible_min_ml_per_s"], c["pump_flow_plausible_max_ml_per_s"])
    cal = fit_pump_calibration(
        pump, parsed, density_g_per_ml=density, source=source, plausible_ml_per_s=plausible
    )
    store = _store(db)
    data = {
        "flow_ml_per_s": cal.flow_ml_per_s,
        "offset_ml": cal.offset_ml,
        "source": source,
        "density_g_per_ml": density,
        "runs": [[r.duration_s, r.mass_g] for r in cal.runs],
    }
    last = store.last_event()
    store.save_calibration(cal.calibration_id, pump, data, 0.0 if last is None else last.t_s)
    store.append(
        "calibrated",
        0.0 if last is None else last.t_s,
        {"id": cal.calibration_id, "pump": pump, **data},
    )
    if as_json:
        print_json({"id": cal.calibration_id, "pump": pump, **data})
    else:
        click.echo(
            f"{cal.calibration_id}: {pump} {cal.flow_ml_per_s * 60:.4f} mL/min, "
            f"offset {cal.offset_ml:.4f} mL ({len(cal.runs)} runs)"
        )


oi.add_command(experiments)
