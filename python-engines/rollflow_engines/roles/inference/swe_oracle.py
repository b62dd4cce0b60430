"""A scripted SWE-lite policy for the sim backend (``options.sim.policy: {kind: swe_oracle, ...}``).

It reads the conversation from the prompt (the sim's chat tokens are one per UTF-8 byte), finds the
task id in the first observation and the turn from the number of its own replies, and answers with a
valid SWE-lite action (docs/swe-lite.md). Whether an episode is solved is drawn once, at its first
turn, from the request's seed (so GRPO group members differ and a run repeats), and written into
that first reply; later turns read it back, so an episode keeps one plan whichever server answers.

- A solver explores for ``solve_after_turns`` turns (views each file, runs commands), then applies
  the task's fix one ``<replace>`` per turn and submits: reward 1.
- A flailer runs plausible commands, sends an invalid action now and then, makes a harmless wrong
  edit and submits after ``flail_turns`` turns: reward 0.

So hundreds of long episodes run through the real env, sandbox and grading with realistic command
latencies and no model; the success rate is ``solve_prob``.
"""
from __future__ import annotations

import random
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ...envs.swe_lite.tasks import Task, generate_task

SOLVER, FLAILER = "I will read the code, then fix it.", "Let me poke around."
_TASK = re.compile(r"Task (t[123]-\d{3})\.")


class SweOracleOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["swe_oracle"] = "swe_oracle"
    solve_prob: float = Field(default=0.5, ge=0, le=1, description="Share of episodes the policy solves.")
    solve_after_turns: int = Field(default=2, ge=0, le=40, description="Turns a solver explores before it edits.")
    flail_turns: int = Field(default=6, ge=1, le=50, description="Turns a flailer acts before it submits.")
    invalid_prob: float = Field(default=0.2, ge=0, le=1, description="A flailer's chance per turn of an unreadable reply.")


def _explore(task: Task, turn: int) -> str:
    sources = [p for p in task.files if not p.endswith("__init__.py")]
    if turn < len(sources):
        return f"<view>{sources[turn]}</view>"
    return "<bash>ls -R && python -c 'import sys; print(sys.version)'</bash>"


def reply(options: SweOracleOptions, conversation: list[str], seed: int) -> str:
    """The next reply, given the conversation's messages (observation, reply, observation, …, observation)."""
    replies = conversation[1::2]
    turn = len(replies)
    found = _TASK.search(conversation[0]) if conversation else None
    if not found:
        return "<submit/>"  # not a SWE-lite episode: end it
    task = generate_task(found[1])
    rng = random.Random(f"{seed}:{task.id}:{turn}")
    if turn == 0:
        solver = random.Random(f"{seed}:{task.id}").random() < options.solve_prob
        plan = SOLVER if solver else FLAILER
        action = _explore(task, 0) if solver and options.solve_after_turns > 0 else None
    else:
        plan = SOLVER if replies[0].startswith(SOLVER) else FLAILER
        action = None
    if plan == SOLVER:
        if action is None:
            edit = turn - options.solve_after_turns
            if edit < 0:
                action = _explore(task, turn)
            elif edit < len(task.fix):
                path, old, new = task.fix[edit]
                action = f'<replace path="{path}"><old>{old}</old><new>{new}</new></replace>'
            else:
                action = "<submit/>"
        return f"{plan if turn == 0 else 'Next.'}\n{action}"
    if turn >= options.flail_turns:
        return "Done, I think.\n<submit/>"
    if rng.random() < options.invalid_prob:
        return f"{plan if turn == 0 else ''} hmm, maybe <bash>ls"
    source = next(p for p in task.files if p.endswith("core.py"))
    choices = ["<bash>ls -la</bash>", "<bash>python -m pytest -q</bash>", f"<view>{source}</view>",
               f'<replace path="{source}"><old>def </old><new>def </new></replace>', "<bash>cat */__init__.py</bash>"]
    return f"{plan if turn == 0 else 'Trying.'}\n{rng.choice(choices)}"
