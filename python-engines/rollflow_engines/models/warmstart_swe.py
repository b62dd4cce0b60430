"""The SWE-lite format warm-start's examples: two-turn transcripts of the ``brief`` episode.

Each example is a training task's brief first observation, a reply that replaces the smallest piece
of the buggy line that occurs once in its file, the env's answer to it, and ``<submit/>``. In a
``correct_prob`` share of the examples the replacement is the task's fix; in the others it puts the
same text back (a no-op edit), so the model learns the action format, which file to name and what to
quote from it, and only sometimes what to change it to: the rest is left to RL. The tasks are the
warm-start's ``env_config.tasks`` (a training split: validation tasks are never shown).
"""
from __future__ import annotations

from ..envs.common_ends import common_ends
from ..envs.swe_lite.env import brief_observation, replaced
from ..envs.swe_lite.tasks import Task, generate_task


def smallest_unique_edit(text: str, old_line: str, new_line: str) -> tuple[str, str]:
    """(old, new): the change from ``old_line`` to ``new_line`` cut to the smallest window around it whose old text
    occurs exactly once in ``text`` (the file that holds ``old_line``); ValueError when even the whole line occurs
    more than once (a mined mutation can hit a line the file repeats)."""
    head, tail = common_ends(old_line, new_line)
    start, old_end, new_end = head, len(old_line) - tail, len(new_line) - tail
    while True:
        old = old_line[start:old_end]
        if old.strip() and text.count(old) == 1:
            return old, new_line[start:new_end]
        if start == 0 and old_end == len(old_line):
            raise ValueError(f"the line {old_line.strip()!r} occurs {text.count(old_line)} times in its file: no one-line replace says it")
        start, old_end, new_end = max(0, start - 1), min(len(old_line), old_end + 1), min(len(new_line), new_end + 1)


def minimal_fix(task: Task) -> tuple[str, str, str]:
    """(path, old, new): the task's one-line fix as smallest_unique_edit cuts it."""
    (path, old_line, new_line), = task.fix  # tier 1: one edit
    return (path, *smallest_unique_edit(task.files[path], old_line, new_line))


def two_turns(path: str, old: str, new: str, correct: bool) -> list[tuple[str, str]]:
    """(reply, the observation after it) per turn: the replace (the fix, or ``old`` put back), then ``<submit/>``."""
    edit = f'<replace path="{path}"><old>{old}</old><new>{new if correct else old}</new></replace>'
    return [(edit, replaced(path)), ("<submit/>", "")]


def swe_transcript(task_id: str, correct: bool) -> tuple[str, list[tuple[str, str]]]:
    """The first observation, then (reply, the observation after it) per turn; the last observation is ''."""
    task = generate_task(task_id)
    return brief_observation(task), two_turns(*minimal_fix(task), correct)
