"""``design_builds(options) -> Design``: the designer's option-named entry point.

Options are ``rigwise build``'s long option names with ``_`` for ``-`` (``model``, ``task``,
``target_tps``, ``budget``, ``new``, ...), validated by pydantic; the CLI, the web UI's Build page
and ``/api/build`` share it.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from rigwise.design.designer import Design, DesignRequest, design
from rigwise.errors import InputError
from rigwise.option_fields import no_flag, number_not_flag
from rigwise.units import parse_count, parse_seconds
from rigwise.validate_input import merged_options, validated


class BuildOptions(BaseModel):
    """The options of ``rigwise build`` (designer mode)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    model: str
    task: Literal["infer", "serve", "finetune", "train"] = "infer"
    target_tps: float | None = Field(None, gt=0, description="decode tokens/s to reach")
    concurrency: int = Field(1, ge=1, le=100_000)
    deadline: str | None = Field(None, description="training deadline, e.g. 30d")
    tokens: str | None = Field(None, description="training tokens, e.g. 2B")
    budget: float | None = Field(None, gt=0, description="purchase budget in USD")
    power_limit: float | None = Field(None, gt=0, description="GPU power limit in watts")
    new: bool = Field(False, description="price parts new (default: used)")
    form: Literal["desktop", "workstation", "server", "rack"] | None = None
    circuit: str = "us-120v-15a"
    usd_per_kwh: float | None = Field(None, ge=0)
    region: str | None = None
    hours_per_day: float | None = Field(None, gt=0, le=24)
    years: float | None = Field(None, gt=0, le=50)
    max_price_age: float | None = Field(None, gt=0, description="days before a price is stale")
    today: dt.date | None = None
    top: int = Field(10, ge=1, le=200)
    method: Literal["lora", "qlora", "full"] | None = Field(
        None, description="finetune method (default: LoRA, then QLoRA)"
    )
    rank: Literal["target", "price", "speed", "tco"] = Field(
        "target", description="target: clean, cheapest that meets the target, then faster"
    )

    @field_validator("*", mode="before")
    @classmethod
    def _no_flags(cls, value: object, info: ValidationInfo) -> object:
        """A bool is no number (budget=True was a $1 budget) and '1_000' no plain one."""
        hint = cls.model_fields[info.field_name or ""].annotation
        return no_flag(None)(value) if number_not_flag(hint) else value

    @field_validator("circuit")
    @classmethod
    def _known_circuit(cls, value: str) -> str:
        from rigwise.design import parts

        return parts.circuit_id(value)  # as people type it: 'US-120V-15A' is us-120v-15a

    @field_validator("deadline", "tokens")
    @classmethod
    def _positive_quantity(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        parse = parse_seconds if info.field_name == "deadline" else parse_count
        try:
            number = parse(value)
        except InputError as exc:
            raise ValueError(exc.message) from None
        if number <= 0:
            raise ValueError("must be more than zero (e.g. 30d, 2B)")
        return value


def training_target(opts: BuildOptions) -> tuple[float | None, float | None]:
    """(tokens, deadline seconds) a finetune/train build is timed and judged on: the user's, else
    the defaults of parts/build_rules.csv (a train run: Chinchilla's 20 tokens per parameter)."""
    tokens = parse_count(opts.tokens) if opts.tokens else None
    deadline = parse_seconds(opts.deadline) if opts.deadline else None
    if opts.task not in ("finetune", "train"):
        return tokens, deadline
    from rigwise.design.parts import rule

    if tokens is None:
        if opts.task == "finetune":
            tokens = rule("finetune_tokens_default")
        else:
            from rigwise.models import load_model

            per_param = rule("train_tokens_per_param_default")
            tokens = per_param * load_model(opts.model).params_total
    if deadline is None:
        deadline = rule(f"{opts.task}_deadline_days_default") * 86400
    return tokens, deadline


def design_request(opts: BuildOptions) -> DesignRequest:
    tokens, deadline = training_target(opts)
    return DesignRequest(
        model=opts.model,
        task=opts.task,
        target_tps=opts.target_tps,
        concurrency=opts.concurrency,
        deadline_s=deadline,
        tokens=tokens,
        method=opts.method,
        rank=opts.rank,
        budget_usd=opts.budget,
        power_limit_watts=opts.power_limit,
        used=not opts.new,
        form=opts.form,
        circuit=opts.circuit,
        usd_per_kwh=opts.usd_per_kwh,
        region=opts.region,
        hours_per_day=opts.hours_per_day,
        years=opts.years,
        max_price_age_days=opts.max_price_age,
        today=opts.today,
        top=opts.top,
    )


# The tasks each task-specific option belongs to (--help says so for each).
_TASK_OPTIONS = {
    "method": ("finetune",),
    "target_tps": ("infer", "serve"),
    "concurrency": ("infer", "serve"),
    "deadline": ("finetune", "train"),
    "tokens": ("finetune", "train"),
}


def check_task_options(opts: BuildOptions) -> None:
    """``InputError`` for an option of another task: it was dropped without a word (--deadline
    on an inference build), or worse, --method on one planned every build with no engine or
    weight format."""
    for name, tasks in _TASK_OPTIONS.items():
        if name in opts.model_fields_set and opts.task not in tasks:
            flag = f"--{name.replace('_', '-')}"
            raise InputError(
                f"{flag} applies to --task {' or '.join(tasks)}, not --task {opts.task}.",
                hint=f"Drop {flag}, or add --task {tasks[0]}.",
            )


def design_builds(options: BuildOptions | None = None, /, **fields: object) -> Design:
    """Ranked builds for the options (a ``BuildOptions``, or its fields as keywords; keywords
    override); bad values, and options of another task, raise ``InputError`` naming the option."""
    given = merged_options(options, fields)
    opts = validated(BuildOptions, given, "Bad build options", "See `rigwise build --help`.")
    check_task_options(opts)
    return design(design_request(opts))
