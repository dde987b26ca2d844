"""The ``rigwise`` command line: a thin layer over the public API.

Subcommands live one module each in this package and are imported only when used, so that
``rigwise infer`` does not pay for ``ray`` or ``fastapi``. Exit codes (every command): 0 ok,
1 nothing feasible (with the reason), 2 bad input or environment (with the fix), 70 an internal
error (one line; ``--debug`` prints the traceback). With ``--json`` errors are JSON on stdout.
"""

from __future__ import annotations

import gc
import importlib
import importlib.util
import sys
from typing import Any

import click

from rigwise.cli._common import harden_params, run_guarded

# command name -> "module:attribute"; a module that is not there (yet) is simply not listed.
COMMANDS: dict[str, str] = {
    "gpus": "rigwise.cli.gpus:gpus",
    "gpu": "rigwise.cli.gpus:gpu",
    "model": "rigwise.cli.model:model",
    "models": "rigwise.cli.model:models",
    "infer": "rigwise.cli.infer:infer",
    "fit": "rigwise.cli.fit:fit",
    "prices": "rigwise.cli.prices:prices",
    "train": "rigwise.cli.train:train",
    "validate": "rigwise.cli.validate:validate",
    "build": "rigwise.cli.build:build",
    "rig": "rigwise.cli.build:rig",
    "probe": "rigwise.cli.probe:probe",
    "bench": "rigwise.cli.probe:bench",
    "monitor": "rigwise.cli.probe:monitor",
    "grid": "rigwise.cli.grid:grid",
    "ui": "rigwise.cli.ui:ui",
    "demo": "rigwise.cli.demo:demo",
    "oi": "rigwise.cli.oi:oi",
}


# command name -> the first paragraph of its help, for `rigwise --help` without importing every
# command (tests/cli/test_registration.py checks that each equals the command's own help).
SUMMARIES: dict[str, str] = {
    "gpus": "Compare accelerators: memory, bandwidth, dense TFLOPS, power, price and value per $"
    " and W.",
    "gpu": "One accelerator with every field and its sources.",
    "model": "Architecture, exact parameter counts, weight bytes per format and KV-cache size.",
    "models": "The model catalog: names, architectures and exact parameter counts.",
    "infer": "Will MODEL run on the hardware, and how fast? Exit 1 when it does not fit.",
    "fit": "Which catalog models run on the hardware: best quant, largest context, speed, lever.",
    "prices": "Your own dated prices (new, used, rent) for GPUs and parts; builds use them first.",
    "train": "Plan a training or fine-tuning run of MODEL on hardware: memory per GPU, step time,"
    " throughput, MFU, time to train, GPU-hours, energy and cost; --search finds the layout.",
    "validate": "Check rigwise's predictions against published measurements.",
    "build": "Ranked builds (box, multi-GPU, several boxes, Apple, renting) for MODEL.",
    "rig": "Describe a rig in YAML and check it: slots, lanes, power, connectors, circuit,"
    " cooling.",
    "probe": "What this machine is: CPU, RAM, GPUs (PCIe, power, NUMA, topology), disks, network,"
    " with warnings and fixes. RIGWISE_FAKE_HARDWARE=<file> describes a fake machine instead.",
    "bench": "Measure this machine next to the catalog's peak and rigwise's prediction, and store"
    " the measured efficiencies for `--calibrated` plans.",
    "monitor": "Serve GPU and host metrics for Prometheus at /metrics and show them live"
    " (docs/grafana-dashboard.json charts them in Grafana).",
    "grid": "Pool machines into a grid on Ray: admission, jobs, datasets, credits, leaderboard.",
    "ui": "Serve the web UI: Compare, Run, Train, Build, My machine, Grid.",
    "demo": "A tour: compare, read a model, plan inference and training, design a build, probe,"
    " and a grid started, joined and stopped on this machine.",
    "oi": "Organoid perfusion maintenance: simulate, run, alarms, calibration and experiments.",
}


def _available(target: str) -> bool:
    return importlib.util.find_spec(target.split(":")[0]) is not None


class LazyGroup(click.Group):
    def main(  # type: ignore[override]
        self,
        args: list[str] | None = None,
        prog_name: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Every way in (the console script, ``python -m rigwise``, click's test runner) maps
        errors to exit codes the same way (see ``run_guarded``)."""
        given = sys.argv[1:] if args is None else list(args)
        if "--debug" in given[1:]:  # accepted after the command too: `rigwise infer ... --debug`
            given = ["--debug", *(a for a in given if a != "--debug")]
        name = prog_name or "rigwise"
        code = run_guarded(
            lambda: super(LazyGroup, self).main(given, name, standalone_mode=False, **extra),
            given,
        )
        if standalone_mode:
            sys.exit(code)
        return code

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name, target in COMMANDS.items() if _available(target)]

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list of ``--help`` from SUMMARIES, as click would write it from each
        command's help, without importing every command (and its dependencies)."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = [
            (name, click.Command(name, help=SUMMARIES[name]).get_short_help_str(limit))
            for name in names
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None or not _available(target):
            return None
        module_name, attribute = target.split(":")
        command = getattr(importlib.import_module(module_name), attribute)
        assert isinstance(command, click.Command)
        return harden_params(command)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            from rigwise.errors import closest

            options = closest(name, self.list_commands(ctx))
            ctx.fail(f"Unknown command {name!r}. Did you mean: {', '.join(options)}?")
        return super().resolve_command(ctx, args)


@click.group(cls=LazyGroup, invoke_without_command=True)
@click.version_option(package_name="rigwise")
@click.option("--debug", is_flag=True, help="Print the traceback of an internal error.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """rigwise: will it run, how fast, what to buy, and how to pool it.

    Run without a command for a tour on the packaged catalog.
    """
    if ctx.invoked_subcommand is None:
        demo = COMMANDS["demo"]
        if _available(demo):
            ctx.invoke(LazyGroup.get_command(cli, ctx, "demo"))  # type: ignore[arg-type]
        else:
            click.echo(ctx.get_help())


def main(argv: list[str] | None = None) -> Any:
    """The command line in this process: its exit code (tests call it in-process)."""
    return cli.main(args=argv, prog_name="rigwise", standalone_mode=False)


# Objects allocated between two young-generation collections in a CLI process (Python's
# default 700): importing a command and its catalogs allocates some 10^5 objects that all stay
# alive, and each collection walks them again; cyclic garbage is still collected, 10^5 objects
# later (a few MB at most).
GC_YOUNG_THRESHOLD = 100_000


def run(argv: list[str] | None = None) -> Any:
    """Console-script and ``python -m rigwise`` entry point: ``main``, in a process that ends
    right after. Every object left is then moved out of the collector's reach (``gc.freeze``):
    the interpreter's last collection at exit would otherwise walk all of them, modules and
    catalogs included, only to find them alive (~6 % of ``rigwise infer``'s instructions; the
    threshold ~2 %). Nothing is lost: memory goes back to the system at exit either way."""
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
    code = main(argv)
    gc.freeze()
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(run())
