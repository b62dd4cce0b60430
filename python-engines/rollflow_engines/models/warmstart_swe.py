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


def minimal_fix(task: Task) -> tuple[str, str, str]:
    """(path, old, new): the task's one-line fix cut to the smallest window around the change whose old
    text occurs exactly once in the file."""
    (path, old_line, new_line), = task.fix  # tier 1: one edit
    head, tail = common_ends(old_line, new_line)
    start, old_end, new_end = head, len(old_line) - tail, len(new_line) - tail
    text = task.files[path]
    while True:
        old = old_line[start:old_end]
        if old.strip() and text.count(old) == 1:
            return path, old, new_line[start:new_end]
        start, old_end, new_end = max(0, start - 1), min(len(old_line), old_end + 1), min(len(new_line), new_end + 1)


def swe_transcript(task_id: str, correct: bool) -> tuple[str, list[tuple[str, str]]]:
    """The first observation, then (reply, the observation after it) per turn; the last observation is ''."""
    task = generate_task(task_id)
    path, old, new = minimal_fix(task)
    edit = f'<replace path="{path}"><old>{old}</old><new>{new if correct else old}</new></replace>'
    return brief_observation(task), [(edit, replaced(path)), ("<submit/>", "")]
