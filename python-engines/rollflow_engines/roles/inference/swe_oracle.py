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

The protocol follows the episode's: when the prompt carries tools (a leading ``tools`` message, as
swe_lite sends with ``actions: tool_calls``; sim.prompt_tools reads it back) every action is a
Hermes/Qwen ``<tool_call>`` built from envs/swe_lite/tool_calls.py (``<replace>`` is ``edit``), and the
flailer's unreadable replies are malformed calls (bad JSON, an unclosed tag, an unknown tool, a missing
argument). Without tools it writes the XML actions, exactly as before tool calls existed.

So hundreds of long episodes run through the real env, sandbox and grading with realistic command
latencies and no model; the success rate is ``solve_prob``.

On the ``swe`` env (a first observation ``Task ID (REPO). Issue:``) it needs ``instances``, the episodes' dataset:
a solver then applies the instance's gold patch through the env's actions, with the noise the ``*_prob`` options
draw (swe_gold.py); ``solve_after_turns`` is swe_lite's alone.
"""
from __future__ import annotations

import json
import random
import re

from ...envs.swe_lite.actions import Bash, Replace, Submit, View
from ...envs.swe_lite.tasks import Task, generate_task
from ...envs.swe_lite.tool_calls import CLOSE, OPEN, TOOLS, call_of
from . import swe_gold
from .swe_gold import FLAILER, SOLVER  # the first reply's plan marker, one pair for both envs
from .swe_oracle_options import SweOracleOptions

_TASK = re.compile(r"Task (t[123]-\d{3})\.")
Act = Bash | View | Replace | Submit


def _xml(action: Act) -> str:
    """An action as the XML format writes it (envs/swe_lite/actions.py)."""
    if isinstance(action, Bash):
        return f"<bash>{action.command}</bash>"
    if isinstance(action, View):
        lines = f' start="{action.start}" end="{action.end}"' if action.start is not None else ""
        return f"<view{lines}>{action.path}</view>"
    if isinstance(action, Replace):
        return f'<replace path="{action.path}"><old>{action.old}</old><new>{action.new}</new></replace>'
    return "<submit/>"


def _malformed_call(rng: random.Random) -> str:
    """A tool call the parser refuses, of the kinds models get wrong: JSON cut short, an unclosed tag, a tool
    that does not exist, a required argument left out. Names come from TOOLS, so they follow its changes."""
    names = [t["function"]["name"] for t in TOOLS]
    tool = rng.choice([t["function"] for t in TOOLS if t["function"]["parameters"]["required"]])
    required = tool["parameters"]["required"]
    kind = rng.choice(["json", "unclosed", "unknown", "missing"])
    if kind == "json":  # the closing brace of the arguments dropped
        return f"{OPEN}\n{json.dumps({'name': tool['name'], 'arguments': dict.fromkeys(required, 'x')})[:-1]}\n{CLOSE}"
    if kind == "unclosed":
        return f"{OPEN}\n{json.dumps({'name': tool['name'], 'arguments': dict.fromkeys(required, 'x')})}"
    if kind == "unknown":  # the name of a tool in other agent harnesses
        name = rng.choice([n for n in ("run_shell", "read_file", "str_replace_editor") if n not in names])
        return f"{OPEN}\n{json.dumps({'name': name, 'arguments': {'command': 'ls -la'}})}\n{CLOSE}"
    arguments = dict.fromkeys(required[1:], "x")  # the first required argument left out
    return f"{OPEN}\n{json.dumps({'name': tool['name'], 'arguments': arguments})}\n{CLOSE}"


def _explore(task: Task, turn: int) -> Act:
    sources = [p for p in task.files if not p.endswith("__init__.py")]
    if turn < len(sources):
        return View(sources[turn])
    return Bash("ls -R && python -c 'import sys; print(sys.version)'")


def reply(options: SweOracleOptions, conversation: list[str], seed: int, tools: list[dict] | None = None) -> str:
    """The next reply, given the conversation's messages (observation, reply, observation, …, observation);
    ``tools``, those the prompt offers (sim.prompt_tools), make every action a tool call."""
    render = call_of if tools else _xml
    if options.instances is not None and swe_gold.is_swe_episode(conversation):
        return swe_gold.reply(options, conversation, seed, render, _malformed_call if tools else lambda _: "<bash>ls")
    replies = conversation[1::2]
    turn = len(replies)
    found = _TASK.search(conversation[0]) if conversation else None
    if not found:
        return render(Submit())  # not a SWE-lite episode: end it
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
                action = Replace(*task.fix[edit])
            else:
                action = Submit()
        return f"{plan if turn == 0 else 'Next.'}\n{render(action)}"
    if turn >= options.flail_turns:
        return f"Done, I think.\n{render(Submit())}"
    if rng.random() < options.invalid_prob:
        # The XML reply's draws end here, so its replies are those it gave before tool calls existed.
        return f"{plan if turn == 0 else ''} hmm, maybe {_malformed_call(rng) if tools else '<bash>ls'}"
    source = next(p for p in task.files if p.endswith("core.py"))
    choices = [Bash("ls -la"), Bash("python -m pytest -q"), View(source), Replace(source, "def ", "def "), Bash("cat */__init__.py")]
    return f"{plan if turn == 0 else 'Trying.'}\n{render(rng.choice(choices))}"
