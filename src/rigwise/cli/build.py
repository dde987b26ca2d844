"""`rigwise rig check RIG.yaml` and `rigwise build MODEL ...`: thin layers over rigwise.design."""

from __future__ import annotations

import datetime as dt
from typing import Any

import click

from rigwise.cli._common import (
    EXIT_INFEASIBLE,
    EXIT_OK,
    console,
    fail,
    print_json,
    ranged_rate,
    ranged_seconds,
    typed_params,
)
from rigwise.cli.option_types import WritableFolder


def _today(text: str | None) -> dt.date | None:
    if not text:
        return None
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        from rigwise.errors import InputError

        raise InputError(f"Cannot read date {text!r}.", hint="Write it like 2026-11-21.") from None


def _usd(value: float | None) -> str:
    return "-" if value is None else f"${value:,.0f}"


@click.group()
def rig() -> None:
    """Describe a rig in YAML and check it: slots, lanes, power, connectors, circuit, cooling."""


@rig.command("check")
@click.argument("rig_file", type=click.Path(dir_okay=False))
@click.option("--max-price-age", type=float, default=None, help="Days before a price is stale.")
@click.option("--today", "today_text", default=None, help="Date prices are judged against.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def check(rig_file: str, max_price_age: float | None, today_text: str | None, as_json: bool) -> int:
    """Check RIG_FILE; exit 0 when it works (maybe with warnings), 1 when it does not."""
    from rigwise.design.rigcheck import check_rig
    from rigwise.design.rigfile import load_rig

    result = check_rig(
        load_rig(rig_file), today=_today(today_text), max_price_age_days=max_price_age
    )
    if as_json:
        print_json(result.to_dict())
    else:
        _print_check(result.to_dict())
    return EXIT_OK if result.ok else EXIT_INFEASIBLE


def _print_check(data: dict[str, Any]) -> None:
    out = console()
    style = {"ok": "green", "warnings": "yellow", "fails": "red"}[data["verdict"]]
    out.print(f"[bold]{data['rig']}[/bold]: [{style}]{data['verdict']}[/{style}]")
    for problem in data["problems"]:
        out.print(f"  {problem['severity']:7} {problem['check']:10} {problem['message']}")
        if problem["fix"]:
            out.print(f"  {'':7} {'':10} fix: {problem['fix']}")
    lanes = data["lanes"]
    out.print(f"lanes: {lanes['used_cpu_lanes']} of {lanes['cpu_lanes']} CPU lanes used")
    for row in lanes["rows"]:
        out.print(f"  x{row['lanes']:<3} {row['source']:8} {row['device']}")
    out.print(
        f"power: idle {data['power_watts_idle']:.0f} W, load {data['power_watts_load']:.0f} W at "
        f"the wall; PSU {data['psu_watts']:.0f} W (150% rule wants "
        f"{data['psu_recommended_watts']:.0f} W)"
    )
    for line in data["parts"]:
        stale = " (stale)" if line["stale"] else ""
        out.print(
            f"  {line['quantity']}x {line['name']:40} {_usd(line['unit_price_usd']):>9} "
            f"{line['price_date']}{stale}"
        )
    out.print(f"purchase: {_usd(data['purchase_usd'])}")


@click.command()
@click.argument("model")
@click.option(
    "--task",
    type=click.Choice(["infer", "serve", "finetune", "train"]),
    default="infer",
    show_default=True,
    help="What the build is for.",
)
@click.option("--target-tps", type=float, default=None, help="Decode tokens/s to reach.")
@click.option("--concurrency", type=int, default=None, help="Concurrent requests (--task serve).")
@click.option("--deadline", default=None, help="Training deadline, e.g. 30d.")
@click.option("--tokens", default=None, help="Training tokens, e.g. 2B.")
@click.option("--budget", type=float, default=None, help="Purchase budget in USD.")
@click.option("--power-limit", type=float, default=None, help="GPU power limit in watts.")
@click.option("--new/--used", "new", default=False, help="Price parts new or used (default used).")
@click.option(
    "--form",
    type=click.Choice(["desktop", "workstation", "server", "rack"]),
    default=None,
    help="Only builds of this form factor.",
)
@click.option("--circuit", default="us-120v-15a", help="Wall circuit id (parts/circuits.csv).")
@click.option("--usd-per-kwh", type=float, default=None, help="Electricity price (USD per kWh).")
@click.option(
    "--region", default=None, help="Electricity price region (parts/electricity_prices.csv)."
)
@click.option("--hours-per-day", type=float, default=None, help="Hours a day the rig runs.")
@click.option("--years", type=float, default=None, help="Years of ownership for the TCO.")
@click.option("--max-price-age", type=float, default=None, help="Days before a price is stale.")
@click.option("--today", "today_text", default=None, help="Date prices are judged against.")
@click.option("--top", type=int, default=10, help="How many options to list.")
@click.option(
    "--method",
    type=click.Choice(["lora", "qlora", "full"]),
    default=None,
    help="Fine-tune method (--task finetune; default: LoRA, then QLoRA).",
)
@click.option(
    "--rank",
    type=click.Choice(["target", "price", "speed", "tco"]),
    default="target",
    help="Order: target (clean checks, cheapest that meets the target, then faster), "
    "price, speed or tco.",
)
@click.option(
    "--plot-dir",
    type=WritableFolder(),
    default=None,
    help="Write a price/speed plot of the builds into this folder.",
)
@click.option("--pool-on", default=None, help="Pooled-memory question: the node hardware.")
@click.option("--nodes", type=int, default=2, help="Nodes in the pool (with --pool-on).")
@click.option("--network", default="10gbe", help="Network between pooled nodes.")
@click.option("--against", default=None, help="A single machine to compare the pool with.")
@click.option("--quant", default=None, help="Weight format for --pool-on.")
@click.option("--nas-dataset", default=None, help="Size a NAS node for this dataset, e.g. 40TB.")
@click.option(
    "--nas-read", default="1GB/s", help="Read throughput the NAS must give, e.g. 2GB/s (or 2GB)."
)
@click.option(
    "--raid",
    type=click.Choice(["raid6", "raid10"]),
    default="raid6",
    show_default=True,
    help="RAID level of the storage question.",
)
@click.option("--drive", default="hdd-20tb", help="Drive id (parts/storage.csv).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def build(model: str, **options: Any) -> int:
    """Ranked builds (box, multi-GPU, several boxes, Apple, renting) for MODEL.

    With --pool-on HW --nodes N --network NET: does pooling N machines serve MODEL like one big
    machine? (capacity adds up, speed does not), answered with the planners' numbers.
    """
    if options["pool_on"]:
        _only_options_of(_POOL_KEYS, "--pool-on (the pooled-memory question)")
        return _pool(model, options)
    if options["nas_dataset"]:
        _only_options_of(_NAS_KEYS, "--nas-dataset (the NAS question)")
        return _nas(options)
    from rigwise.design.api import design_builds

    _only_options_of((*_DESIGNER_KEYS, "today_text", "plot_dir"), "ranked builds")
    today = _today(options["today_text"])
    designer_keys = _DESIGNER_KEYS
    result = design_builds(
        model=model, today=today, **{k: options[k] for k in designer_keys if options[k] is not None}
    )
    if options["plot_dir"]:
        from rigwise.design.plot import pareto_plot

        pareto_plot(result, options["plot_dir"])
    if options["as_json"]:
        print_json(result.to_dict())
    else:
        _print_design(result.to_dict())
    return EXIT_OK if result.options else EXIT_INFEASIBLE


_DESIGNER_KEYS = (
    "task", "target_tps", "concurrency", "deadline", "tokens", "budget", "power_limit", "new",
    "form", "circuit", "usd_per_kwh", "region", "hours_per_day", "years", "max_price_age", "top",
    "method", "rank",
)  # fmt: skip
_POOL_KEYS = ("pool_on", "nodes", "network", "against", "quant")
_NAS_KEYS = ("nas_dataset", "nas_read", "raid", "drive", "new")


def _only_options_of(keys: tuple[str, ...], question: str) -> None:
    """build answers one of three questions; an option typed for another was dropped without
    a word (e.g. --drive or --network on ranked builds, --budget with --pool-on)."""
    stray = typed_params((*keys, "as_json"), arguments=False)
    if stray:
        fail(
            f"{', '.join(stray)} {'does' if len(stray) == 1 else 'do'} not apply to {question}.",
            hint=f"Drop {'it' if len(stray) == 1 else 'them'}; `rigwise build --help` says which "
            "question each option belongs to.",
        )


def _nas(options: dict[str, Any]) -> int:
    from rigwise.design.storage import plan_storage
    from rigwise.units import format_bytes, format_rate, parse_bytes

    plan = plan_storage(
        parse_bytes(options["nas_dataset"]),
        parse_bytes(str(options["nas_read"]).removesuffix("/s")),  # a rate: bytes per second
        level=options["raid"],
        drive=options["drive"],
        used=not options["new"],
    )
    if options["as_json"]:
        print_json(plan.to_dict())
    else:
        ure = (
            "survived by the second parity" if plan.survives_ure_during_rebuild else "a lost block"
        )
        usable = format_bytes(plan.usable_bytes)
        console().print(
            f"{plan.level}: {plan.disks}x {plan.drive}, {usable} usable of "
            f"{format_bytes(plan.raw_bytes)}, reads {format_rate(plan.read_bytes_per_s)}, "
            f"rebuild {plan.rebuild_seconds / 3600:.1f} h with a "
            f"{plan.rebuild_ure_probability:.0%} chance of an unreadable sector ({ure})"
            f", {_usd(plan.purchase_usd)} ({plan.price_date})"
            + ("" if plan.fits else f"; {plan.reason}")
        )
    return EXIT_OK if plan.fits else EXIT_INFEASIBLE


def _pool(model: str, options: dict[str, Any]) -> int:
    from rigwise.design.clusters import pooled_memory_answer

    answer = pooled_memory_answer(
        model,
        options["pool_on"],
        options["nodes"],
        options["network"],
        reference=options["against"],
        quant=options["quant"],
    )
    if options["as_json"]:
        print_json(answer.to_dict())
    else:
        console().print(answer.answer)
    return EXIT_OK if answer.pooled.fits or answer.single.fits else EXIT_INFEASIBLE


def _speed_text(opt: dict[str, Any]) -> str:
    """Decode speed, or the training time, with its P10-P90 range (and which side similar
    rigs measured, when the whole range is on one side); an unknown time is "time unknown"."""
    decode = opt["decode_tokens_per_s"]
    if decode is not None:
        return ranged_rate(decode, opt.get("decode_tokens_per_s_interval"))
    if opt["time_to_train_s"]:
        return ranged_seconds(opt["time_to_train_s"], opt.get("time_to_train_s_interval"))
    return "time unknown"


def _target_text(data: dict[str, Any]) -> str:
    if data["task"] in ("finetune", "train") and data.get("tokens"):
        from rigwise.units import format_count, format_seconds

        deadline = data.get("deadline_s")
        within = f" within {format_seconds(deadline)}" if deadline else ""
        method = f", {data['method']}" if data.get("method") else ""
        return f"; target {format_count(data['tokens'])} tokens{within}{method}"
    if data.get("target_tps"):
        return f"; target {data['target_tps']:,.1f} tok/s"
    return ""


def _print_design(data: dict[str, Any]) -> None:
    out = console()
    out.print(
        f"[bold]{data['model']}[/bold] ({data['task']}): {len(data['options'])} option(s), "
        f"ranked by {data.get('rank', 'target')}{_target_text(data)}"
    )
    for i, opt in enumerate(data["options"], start=1):
        speed = _speed_text(opt)
        nodes = f" x{opt['nodes']} nodes over {opt['network']}" if opt["nodes"] > 1 else ""
        how = " ".join(filter(None, (opt["engine"], opt["quant"], opt["split"]))) or "-"
        out.print(
            f"{i}. {opt['kind']:13} {opt['on']}{nodes} ({how}): {speed}, "
            + (
                f"rent ${opt['rent_usd_per_hour']:,.2f}/h"
                if opt["kind"] == "rent"
                else f"buy {_usd(opt['purchase_usd'])}"
            )
            + f", TCO {_usd(opt['tco_usd'])}"
            + (f" ({opt['tco_period']})" if opt.get("tco_period") else "")
            + (f", {opt['power_watts_load']:,.0f} W load" if opt["kind"] != "rent" else "")
            + f", checks {opt['checks']['verdict']}"
            + (f", {opt['stale_prices']} stale price(s)" if opt["stale_prices"] else "")
        )
    for line in data.get("comparison_text", []):
        out.print(line)
    if data["rejected"]:
        total = sum(data["rejected"].values())
        out.print(
            f"rejected {total} candidates ({data['evaluated']} were estimated by the planners):"
        )
        for reason, count in data["rejected"].items():
            examples = "; ".join(data["rejected_examples"].get(reason, []))
            out.print(f"  {count:4} {reason}" + (f" (e.g. {examples})" if examples else ""))
    for note in data["notes"]:
        out.print(f"note: {note}")
