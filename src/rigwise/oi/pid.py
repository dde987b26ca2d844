"""A PID with clamped output and conditional-integration anti-windup (the integral only grows
while the output is not saturated in the same direction; Astrom & Hagglund, "Advanced PID
Control", ISA 2006, sec. 3.5)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Pid:
    kp: float
    ki: float
    kd: float
    out_min: float = 0.0
    out_max: float = 1.0
    integral: float = 0.0
    last_error: float | None = None

    def update(self, setpoint: float, measured: float, dt_s: float, limit: float = 1.0) -> float:
        """The clamped output; ``limit`` lowers the upper clamp (tier 1: reduce heater output)."""
        error = setpoint - measured
        derivative = (
            0.0 if self.last_error is None or dt_s <= 0 else ((error - self.last_error) / dt_s)
        )
        self.last_error = error
        high = min(self.out_max, limit)
        trial = self.kp * error + self.ki * (self.integral + error * dt_s) + self.kd * derivative
        if (trial < high or error < 0) and (trial > self.out_min or error > 0):
            self.integral += error * dt_s
        raw = self.kp * error + self.ki * self.integral + self.kd * derivative
        return min(high, max(self.out_min, raw))

    def reset(self) -> None:
        self.integral = 0.0
        self.last_error = None
