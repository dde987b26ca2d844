"""`rigwise` with no command: a short tour on the packaged catalog, one answer per question.

Each line is a verdict, a number and a lever, computed by the same public API the other
commands print; ``--json`` gives the full results.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from rigwise.cli._common import EXIT_OK, print_json
from rigwise.errors import RigwiseError
from rigwise.serialize import to_jsonable
from rigwise.units import format_bytes, format_memory, format_seconds


def _compare() -> tuple[Any, str]:
    from rigwise.api.gpus import list_gpus

    result = to_jsonable(list_gpus(names="RTX 3090, RTX 4090, M3 Max"))
    cells = [
        f"{d['id']}: {format_memory(d['memory_bytes'])}, "
        f"{d['memory_bandwidth_bytes_per_s'] / 1e9:.0f} GB/s, "
        f"{(d['flops'].get('bf16') or d['flops'].get('fp16') or 0) / 1e12:.0f} bf16 TFLOPS"
        for d in result["devices"]
    ]
    return result, "; ".join(cells)


def _model() -> tuple[Any, str]:
    from rigwise.models import load_model

    spec = load_model("llama-3.1-70b")
    return spec, (
        f"{spec.name}: {spec.params_total:,} parameters, "
        f"{format_bytes(spec.weights_bytes('Q4_K_M'))} at Q4_K_M, "
        f"KV cache {format_bytes(spec.kv_cache_bytes_per_token('f16'))} per token"
    )


def _infer(model: str, on: str, quant: str | None = None) -> Callable[[], tuple[Any, str]]:
    def run() -> tuple[Any, str]:
        from rigwise.api.infer import plan_inference

        plan = to_jsonable(plan_inference(model=model, on=on, quant=quant, context=8192))
        line = f"{model} on {on} ({plan['quant']}, {plan['engine']}): {plan['verdict']}"
        if plan.get("decode"):
            line += f", ~{plan['decode']['tokens_per_s']:.1f} tok/s decode"
        elif plan.get("reason"):
            line += f" ({plan['reason']})"
        if plan.get("levers"):
            line += f"; lever: {plan['levers'][0]['description']}"
        return plan, line

    return run


def _train() -> tuple[Any, str]:
    from rigwise.api.train import plan_training

    plan = to_jsonable(
        plan_training(model="llama-3.1-8b", on="rtx-4090", method="qlora", tokens=1e8, seq=2048)
    )
    if not plan["fits"]:
        return plan, f"QLoRA of llama-3.1-8b on one rtx-4090: does not fit ({plan['reason']})"
    return plan, (
        f"QLoRA of llama-3.1-8b on one rtx-4090, 100M tokens: fits, "
        f"{format_bytes(plan['memory_per_gpu']['total_bytes'])} per GPU, "
        f"{format_seconds(plan['time_to_train_s'])}, ~${plan['cost_usd']:.0f} rented"
    )


def _build() -> tuple[Any, str]:
    from rigwise.design.api import design_builds

    design = to_jsonable(
        design_builds(model="llama-3.1-70b", task="infer", target_tps=15, budget=3000, top=3)
    )
    if not design["options"]:
        return design, "no build under $3,000 reaches 15 tok/s for llama-3.1-70b"
    best = design["options"][0]
    rejected = (
        sum(design.get("rejected", {}).values()) if isinstance(design.get("rejected"), dict) else 0
    )
    return design, (
        f"llama-3.1-70b at >= 15 tok/s under $3,000 (used parts): {best['on']} "
        f"x{best['nodes']} for ${best['purchase_usd']:,.0f}, "
        f"~{best['decode_tokens_per_s']:.1f} tok/s ({rejected} candidates rejected)"
    )


def _probe() -> tuple[Any, str]:
    from rigwise.probe import probe

    report = to_jsonable(probe())
    cpu = report.get("cpu") or {}
    return report, (
        f"this machine: {cpu.get('model', '?')}, {cpu.get('cores')} cores, "
        f"{format_bytes(report.get('memory_bytes') or 0)} RAM, "
        f"{len(report.get('gpus') or [])} GPU(s), "
        f"{len(report.get('warnings') or [])} warning(s)"
    )


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _grid() -> tuple[Any, str]:
    """`rigwise grid up` on this machine (loopback, SQLite), this machine joins it (probe +
    benchmark, judged by the default policy, then measured by the grid on its own Ray worker),
    a dataset is stored, then `grid down` stops what was started and the folder (tokens
    included) is removed."""
    import shutil
    import subprocess
    import sys
    import tempfile

    data_dir = tempfile.mkdtemp(prefix="rigwise-grid-demo-")
    port = _free_port()
    up = [sys.executable, "-m", "rigwise", "grid", "up", "--data-dir", data_dir,
          "--host", "127.0.0.1", "--port", str(port), "--ray-port", str(_free_port()),
          "--replicas", "1"]  # fmt: skip
    process = subprocess.Popen(up, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        return _tour_grid(process, f"http://127.0.0.1:{port}", data_dir)
    finally:
        process.terminate()
        process.wait(timeout=60)
        down = [sys.executable, "-m", "rigwise", "grid", "down", "--data-dir", data_dir]
        subprocess.run(down, capture_output=True, timeout=180, check=False)
        shutil.rmtree(data_dir, ignore_errors=True)


def _tour_grid(process: Any, url: str, data_dir: str) -> tuple[Any, str]:
    import getpass
    import socket
    from pathlib import Path

    from rigwise.grid import agent, measure
    from rigwise.grid.client import GridClient

    join_token = _wait_for_join_token(process)
    # In process, so the demo does not overwrite a real grid credential in ~/.config.
    answer = agent.join(GridClient(url, join_token), measure.ProbeFacts("demo", "demo"),
                        socket.gethostname(), getpass.getuser(), {},
                        agent.start_ray_worker(url), stop_ray=agent.stop_ray_worker)  # fmt: skip
    admin = GridClient(url, (Path(data_dir) / "admin-token").read_text().strip())
    stored = admin.data_put("demo-text", _DEMO_TEXT, replicas=1)
    verdict = answer["state"] + (f" ({'; '.join(answer['reasons'])})" if answer["reasons"] else "")
    answer = {k: v for k, v in answer.items() if k not in ("credential", "ray_token")}
    result = {"url": url, "join": answer, "dataset": stored}
    return result, (
        f"grid up on {url} (SQLite); this machine joined it, measured by the grid on its own "
        f"Ray worker and judged by the default policy: {verdict}; a dataset stored "
        f"content-addressed (sha256 {str(stored.get('sha256', ''))[:12]}...); then stopped "
        "and its folder removed"
    )


_DEMO_TEXT = b"Nodes join the grid only when they meet the requirements.\n" * 64


def _wait_for_join_token(process: Any) -> str:
    from rigwise.errors import GridError

    lines = []
    for line in process.stdout:
        lines.append(line.rstrip())
        if line.startswith("join token: "):
            return str(line.split(": ", 1)[1].strip())
    raise GridError("`rigwise grid up` stopped before it was ready: " + " | ".join(lines[-5:]))


STEPS: tuple[tuple[str, str, Callable[[], tuple[Any, str]]], ...] = (
    ("know", "Compare cards", _compare),
    ("model", "Read a model", _model),
    ("infer_70b", "Will it run?", _infer("llama-3.1-70b", "2x rtx-3090", "Q4_K_M")),
    ("infer_405b_laptop", "On a laptop?", _infer("llama-3.1-405b", "m3-max-40c-128gb")),
    ("train", "Fine-tune", _train),
    ("build", "What to buy", _build),
    ("probe", "Measure", _probe),
    ("grid", "Pool", _grid),
)


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print every result as JSON.")
@click.option("--no-grid", is_flag=True, help="Skip starting a grid (Ray) on this machine.")
def demo(as_json: bool, no_grid: bool) -> int:
    """A tour: compare, read a model, plan inference and training, design a build, probe, and a
    grid started, joined and stopped on this machine."""
    results: dict[str, Any] = {}
    for key, title, step in STEPS:
        if no_grid and key == "grid":
            continue
        try:
            result, line = step()
        except RigwiseError as exc:  # a demo step that cannot run says why and the tour goes on
            result, line = {"error": str(exc)}, f"could not run: {exc}"
        except ImportError as exc:  # an optional extra that is not installed
            hint = f"{exc.name} is not installed: pip install 'rigwise[all]'"
            result, line = {"error": hint}, f"could not run: {hint}"
        results[key] = result
        if not as_json:
            click.echo(f"{click.style(title + ':', bold=True)} {line}")
    if as_json:
        print_json(results)
    else:
        click.echo(
            "\nNext: rigwise gpus | rigwise infer MODEL --on HW"
            " | rigwise train MODEL --on HW --search | rigwise build MODEL"
            " | rigwise probe | rigwise ui | rigwise grid up"
            "  (--json on every command)"
        )
    return EXIT_OK
