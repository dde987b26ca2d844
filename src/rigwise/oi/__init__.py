"""Organoid-intelligence (O.I.) perfusion maintenance: keep a culture's medium fresh, warm and in
band, stop at once when something is wrong, and queue experiments on its electrodes.

Layers, lowest first: ``constants`` (the data file) -> ``hw`` (sensor/actuator interfaces,
calibration) -> ``plant``/``simdevices`` (the simulator) and ``drivers`` (gpiozero, smbus2) ->
``interlocks``, ``pid``, ``scheduler``, ``recycling``, ``health`` -> ``controller`` -> ``store``
(SQLite event log) -> ``simulate`` and ``experiments``. docs/oi.md is the user guide.
"""

from __future__ import annotations

from rigwise.oi.constants import Constants, load_constants

__all__ = ["Constants", "load_constants"]
