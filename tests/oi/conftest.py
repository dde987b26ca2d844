from __future__ import annotations

from collections.abc import Callable

import pytest

from rigwise.oi.constants import Constants, load_constants
from rigwise.oi.faults import FaultSpec
from rigwise.oi.simulate import SimRig, build_sim
from rigwise.oi.store import Store


@pytest.fixture(scope="session")
def constants() -> Constants:
    return load_constants()


@pytest.fixture
def make_rig(constants: Constants) -> Callable[..., SimRig]:
    def make(
        faults: tuple[FaultSpec, ...] = (),
        *,
        period_s: float = 60.0,
        seed: int = 3,
        store: Store | None = None,
        **kw: object,
    ) -> SimRig:
        return build_sim(constants, faults, seed, store or Store(), period_s=period_s, **kw)  # type: ignore[arg-type]

    return make
