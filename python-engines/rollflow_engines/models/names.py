"""Names of models built from code: ``tiny:<preset>`` and ``tiny:<preset>+warm:<warm-start>`` (tiny.py, warmstart.py)."""
from __future__ import annotations


def split_name(name: str) -> tuple[str, str | None]:
    """``tiny:small+warm:add`` -> ("small", "add"); ``tiny:small`` -> ("small", None)."""
    body = name.removeprefix("tiny:")
    preset, sep, warm = body.partition("+warm:")
    return preset, (warm if sep else None)
