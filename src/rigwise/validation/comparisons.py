"""Like-for-like comparisons with other tools: rigwise's error on exactly the rows the other
tool reported on (``data/tool_comparisons.csv``), never a different row set."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rigwise.validation.stats import Comparison

DATA_FILE = Path(__file__).parent / "data" / "tool_comparisons.csv"


@dataclass(frozen=True)
class ToolComparison:
    tool: str
    source: str
    metric: str
    rows: int  # rows the other tool reported on
    rigwise_rows: int  # rows rigwise was compared on here (must equal ``rows``)
    tool_mean_abs_error_pct: float
    rigwise_mean_abs_error_pct: float
    roles: tuple[str, ...]  # the roles of the rows compared (fit rows: in-sample for rigwise)
    note: str

    @property
    def like_for_like(self) -> bool:
        return self.rows == self.rigwise_rows

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "source": self.source,
            "metric": self.metric,
            "rows": self.rows,
            "rigwise_rows": self.rigwise_rows,
            "like_for_like": self.like_for_like,
            "tool_mean_abs_error_pct": self.tool_mean_abs_error_pct,
            "rigwise_mean_abs_error_pct": self.rigwise_mean_abs_error_pct,
            "roles": list(self.roles),
            "note": self.note,
        }


def tool_comparisons(
    comparisons: Sequence[Comparison], path: Path = DATA_FILE
) -> list[ToolComparison]:
    """One entry per row of ``tool_comparisons.csv`` whose source is among ``comparisons``."""
    from rigwise.catalog.loader import read_commented_csv

    rows = read_commented_csv(path)
    found: list[ToolComparison] = []
    for row in rows:
        same = [
            c
            for c in comparisons
            if c.source == row["rigwise_source"]
            and c.metric == row["metric"]
            and not (row["exclude_label"] and row["exclude_label"] in c.label)
        ]
        if not same:
            continue
        found.append(
            ToolComparison(
                tool=row["tool"],
                source=row["rigwise_source"],
                metric=row["metric"],
                rows=int(row["rows"]),
                rigwise_rows=len(same),
                tool_mean_abs_error_pct=float(row["tool_mean_abs_error_pct"]),
                rigwise_mean_abs_error_pct=statistics.fmean(abs(c.error_pct) for c in same),
                roles=tuple(sorted({c.role for c in same})),
                note=row["note"],
            )
        )
    return found
