"""Element-wise float, min, max and ceil over plain numbers or numpy arrays.

A formula written with these serves one plan (plain floats: numpy is not imported, which keeps
a single plan's start-up short) and the array searches (numpy arrays) from the same line. The
plain case is checked inline (``isinstance`` of each argument, no helper call): a plan makes
dozens of these calls, a ``--queries`` sweep thousands of plans.
"""

from __future__ import annotations

import math
from typing import Any

_NUMBER = (int, float)  # a tuple: isinstance with it is faster than with ``int | float``


def as_float(value: Any) -> Any:
    """``float(value)`` for a number, a float array for anything else."""
    if isinstance(value, _NUMBER):
        return float(value)
    import numpy as np

    return np.asarray(value, dtype=float)


def minimum(a: Any, b: Any) -> Any:
    if isinstance(a, _NUMBER) and isinstance(b, _NUMBER):
        return min(a, b)
    import numpy as np

    return np.minimum(a, b)


def maximum(a: Any, b: Any) -> Any:
    if isinstance(a, _NUMBER) and isinstance(b, _NUMBER):
        return max(a, b)
    import numpy as np

    return np.maximum(a, b)


def ceil(value: Any) -> Any:
    """Rounded up, as a float (or a float array)."""
    if isinstance(value, _NUMBER):
        return float(math.ceil(value))
    import numpy as np

    return np.ceil(value)
