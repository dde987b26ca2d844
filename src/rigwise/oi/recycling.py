"""Spent-media grading, recycling (off by default) and the volume ledger.

Grades: A reusable after conditioning, B dilute (reusable only at half the recycled share),
C discard; from pH, glucose, lactate and osmolality against the constants' limits. Every lot
keeps its lineage (the exchange it came from, how often it was reused).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rigwise.oi.constants import Constants


@dataclass(frozen=True)
class Grade:
    grade: str  # A | B | C
    reasons: tuple[str, ...]


def grade_spent(
    c: Constants, ph: float, glucose_mm: float, lactate_mm: float, osmolality: float
) -> Grade:
    reasons = []
    if not c["ph_band_low"] <= ph <= c["ph_band_high"]:
        reasons.append(f"pH {ph:.2f} out of band")
    if not c["osmolality_band_low_mosm_kg"] <= osmolality <= c["osmolality_band_high_mosm_kg"]:
        reasons.append(f"osmolality {osmolality:.0f} out of band")
    if lactate_mm > c["grade_b_max_lactate_mm"]:
        reasons.append(f"lactate {lactate_mm:.1f} mM")
    if reasons:
        return Grade("C", tuple(reasons))
    if glucose_mm >= c["grade_a_min_glucose_mm"] and lactate_mm <= c["grade_a_max_lactate_mm"]:
        return Grade("A", ())
    return Grade("B", (f"glucose {glucose_mm:.1f} mM, lactate {lactate_mm:.1f} mM",))


@dataclass
class Lot:
    lot_id: str
    volume_ml: float
    grade: str
    reuse_count: int
    parent: str  # the exchange (or lot) it came from


@dataclass
class RecyclePool:
    c: Constants
    enabled: bool = False
    lots: list[Lot] = field(default_factory=list)
    fresh_added_ml: float = 0.0
    recycled_added_ml: float = 0.0
    discarded_ml: float = 0.0

    def add_spent(self, lot: Lot) -> bool:
        """Keep a graded lot; returns False when it must be discarded (grade C, or reused
        too often, or recycling is off)."""
        usable = lot.grade != "C" and lot.reuse_count < self.c["recycle_max_reuse"]
        if self.enabled and usable:
            self.lots.append(lot)
            return True
        self.discarded_ml += lot.volume_ml
        return False

    def take(self, volume_ml: float) -> Lot | None:
        """A recycled share for an addition, if the fresh:recycled cap allows it."""
        if not self.enabled:
            return None
        total = self.fresh_added_ml + self.recycled_added_ml + volume_ml
        for lot in self.lots:
            cap = self.c["recycle_max_ratio"] * (0.5 if lot.grade == "B" else 1.0)
            if lot.volume_ml >= volume_ml and self.recycled_added_ml + volume_ml <= cap * total:
                lot.volume_ml -= volume_ml
                if lot.volume_ml < 1e-9:
                    self.lots.remove(lot)
                self.recycled_added_ml += volume_ml
                return Lot(lot.lot_id, volume_ml, lot.grade, lot.reuse_count + 1, lot.parent)
        return None

    def note_fresh(self, volume_ml: float) -> None:
        self.fresh_added_ml += volume_ml


@dataclass
class Ledger:
    """Expected housing volume from commanded doses and the evaporation estimate, reconciled
    against the level sensor; the error is what the ledger cannot explain."""

    c: Constants
    start_ml: float
    added_ml: float = 0.0
    removed_ml: float = 0.0
    max_abs_error_ml: float = 0.0
    last_error_ml: float = 0.0

    def expected(self, elapsed_s: float) -> float:
        evaporation = self.c["evaporation_ml_per_day"] * elapsed_s / 86400.0
        return self.start_ml + self.added_ml - self.removed_ml - evaporation

    def reconcile(self, elapsed_s: float, measured_ml: float) -> float:
        self.last_error_ml = measured_ml - self.expected(elapsed_s)
        self.max_abs_error_ml = max(self.max_abs_error_ml, abs(self.last_error_ml))
        return self.last_error_ml
