"""The MEA (microelectrode array) interface and its simulator, plus spike detection.

Detection: threshold at ``-k`` x the noise standard deviation, the deviation estimated as
median(|x|)/0.6745 (Quiroga, Nadasdy & Ben-Shaul 2004, Neural Comput 16:1661); the Neuroplatform
uses k = 6 (Jordan et al. 2024). A 1 ms refractory period counts each spike once.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

SAMPLE_RATE_HZ = 2000.0  # enough to place the simulated spikes; real MEAs sample at 10-30 kHz
MAX_RECORDED_S = 60.0  # a longer window is recorded as its first minute (bounded work)


class Mea(Protocol):
    def stimulate(self, electrodes: list[int], params: dict[str, Any]) -> None: ...

    def record(self, electrodes: list[int], window_s: float) -> list[np.ndarray]: ...

    def stop(self) -> None: ...


def detect_spikes(trace: np.ndarray, k_sigma: float) -> int:
    sigma = float(np.median(np.abs(trace))) / 0.6745
    if sigma <= 0:
        return 0
    below = trace < -k_sigma * sigma
    onsets = np.flatnonzero(below & ~np.concatenate(([False], below[:-1])))
    refractory = int(SAMPLE_RATE_HZ * 1e-3)
    count, last = 0, -refractory - 1
    for i in onsets:
        if i - last > refractory:
            count += 1
            last = int(i)
    return count


class SimMea:
    """Noise plus Poisson spikes at the plant's current spike rate (per electrode)."""

    def __init__(self, rate_hz: Any, noise_uv: float, seed: int = 0) -> None:
        self.rate_hz = rate_hz  # a callable: the plant's rate now
        self.noise_uv = noise_uv
        self.rng = np.random.default_rng(seed)
        self.stimulating = False
        self.fail_on_record = False  # tests: a failing run must still clean up

    def stimulate(self, electrodes: list[int], params: dict[str, Any]) -> None:
        self.stimulating = True

    def record(self, electrodes: list[int], window_s: float) -> list[np.ndarray]:
        if self.fail_on_record:
            raise RuntimeError("MEA amplifier did not answer")
        n = int(min(window_s, MAX_RECORDED_S) * SAMPLE_RATE_HZ)
        out = []
        for _ in electrodes:
            trace = self.rng.normal(0.0, self.noise_uv, n)
            spikes = self.rng.poisson(float(self.rate_hz()) * n / SAMPLE_RATE_HZ)
            where = self.rng.integers(0, max(1, n - 2), spikes)
            trace[where] -= self.rng.uniform(8, 12, spikes) * self.noise_uv
            out.append(trace)
        return out

    def stop(self) -> None:
        self.stimulating = False
