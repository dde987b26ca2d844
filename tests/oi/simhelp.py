"""Helpers shared by the O.I. tests."""

from __future__ import annotations

from rigwise.oi.simulate import SimRig


def advance(rig: SimRig, until_s: float) -> None:
    """Run the loop (step, then the plant moves) until simulated time ``until_s``."""
    while rig.clock.now() < until_s:
        rig.controller.step()
        rig.plant.advance(rig.controller.period_s)
        rig.clock.sleep(rig.controller.period_s)
