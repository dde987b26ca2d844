"""Element-wise helpers: plain numbers stay plain (no numpy), arrays go through numpy, and both
give the same values."""

from __future__ import annotations

import numpy as np

from rigwise.estimate.elementwise import as_float, ceil, maximum, minimum


def test_numbers_stay_plain_floats_and_ints() -> None:
    assert as_float(3) == 3.0 and type(as_float(3)) is float
    assert minimum(2, 5.5) == 2 and maximum(2, 5.5) == 5.5
    assert ceil(2.01) == 3.0 and type(ceil(2.01)) is float


def test_arrays_match_the_numbers_element_by_element() -> None:
    a, b = np.array([1.0, 7.5, 2.2]), np.array([3.0, 2.0, 2.2])
    assert minimum(a, b).tolist() == [min(x, y) for x, y in zip(a, b, strict=True)]
    assert maximum(a, 2.0).tolist() == [max(x, 2.0) for x in a]
    assert ceil(a).tolist() == [1.0, 8.0, 3.0]
    assert as_float([1, 2]).dtype == np.float64
