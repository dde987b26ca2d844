"""Element-wise float, min, max and ceil over plain numbers or numpy arrays.

A formula written with these serves one plan (plain floats: numpy is not imported, which keeps
a single plan's start-up short) and the array searches (numpy arrays) from the same line.
"""

from __future__ import annotations

import math
from typing import Any

_NUMBER = (int, float)  # a tuple: isinstance with it is faster than with ``int | float``


def _plain(*values: Any) -> bool:
    for value in values:  # noqa: SIM110  # a loop, not all(generator): called per formula
        if not isinstance(value, _NUMBER):
            return False
    return True


def as_float(value: Any) -> Any:
    """``float(value)`` for a number, a float array for anything else."""
    if _plain(value):
        return float(value)
    import numpy as np

    return np.asarray(value, dtype=float)


def minimum(a: Any, b: Any) -> Any:
    if _plain(a, b):
        return min(a, b)
    import numpy as np

    return np.minimum(a, b)


def maximum(a: Any, b: Any) -> Any:
    if _plain(a, b):
        return max(a, b)
    import numpy as np

    return np.maximum(a, b)


def ceil(value: Any) -> Any:
    """Rounded up, as a float (or a float array)."""
    if _plain(value):
        return float(math.ceil(value))
    import numpy as np

    return np.ceil(value)
