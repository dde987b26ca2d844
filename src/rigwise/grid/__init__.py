"""The rigwise grid: pooled machines on Ray with admission, placement, datasets, credits and a
leaderboard.

Layering inside this package: ``policy``, ``placement``, ``credits``, ``storage`` and ``auth``
are pure (no Ray, no web framework); ``ray_adapter`` (a subpackage) alone imports ``ray``,
``tinylm`` the only one importing ``torch``, ``coordinator`` the only one importing FastAPI.
"""

from __future__ import annotations
