"""Sequences grouped by length, so a short sequence never pays for a long one's padding.

Both torch backends pad a batch to its longest sequence: the inference server
at each decode step (it recomputes every running sequence in full, no KV
cache), the trainer in each micro-batch. When all sequences started together
(a synchronous batch) their lengths are alike and padding is cheap; with a
long tail (async rollout, continued partial generations) a batch mixes
10-token and 130-token sequences, and one padded pass would charge every short
sequence the longest one's cost. One pass per width group bounds the waste:
each group's longest row is at most ``slack`` times its shortest.
"""
from __future__ import annotations

from collections.abc import Sequence

DEFAULT_SLACK = 1.5


def width_groups(lengths: Sequence[int], slack: float = DEFAULT_SLACK) -> list[list[int]]:
    """Indices into ``lengths``, grouped: in ascending length order, a group takes rows while the
    row's length is at most ``slack`` × the group's first (shortest) length. Every index appears
    exactly once. slack ≥ 1; a huge slack gives one group (a single padded pass)."""
    if slack < 1:
        raise ValueError(f"slack must be at least 1, got {slack}")
    groups: list[list[int]] = []
    shortest = 0
    for i in sorted(range(len(lengths)), key=lengths.__getitem__):
        if not groups or lengths[i] > slack * shortest:
            groups.append([])
            shortest = lengths[i]
        groups[-1].append(i)
    return groups
