"""How much two sequences (lines, characters) share at their start and at their end: the smallest window of a change."""
from __future__ import annotations

from collections.abc import Sequence


def common_ends(a: Sequence, b: Sequence) -> tuple[int, int]:
    """(head, tail): the length of the longest common prefix, then of the longest common suffix of what remains, so
    ``a[head:len(a) - tail]`` and ``b[head:len(b) - tail]`` are the parts that differ (never overlapping)."""
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    return head, tail
