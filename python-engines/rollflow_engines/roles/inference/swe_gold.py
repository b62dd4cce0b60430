"""The scripted policy on the ``swe`` env (``options.sim.policy: {kind: swe_oracle, instances: FILE, ...}``): the
instance's gold ``patch`` applied through the env's own actions, in xml or tool calls (swe_oracle renders them).

It finds the instance from the first observation (``Task {instance_id} ({repo}). Issue:``, envs/swe/env.py) in the
dataset file its options name; the gold patch is the one thing it is given that a model is not. A solver views the
region of each changed file, sends one ``edit`` (str_replace) per hunk (the hunk's context and removed lines, which
is how an agent quotes code), applies with ``git apply`` in the sandbox what str_replace cannot say (a new, deleted
or renamed file, a hunk with no text before it), and submits. When an edit of its own is refused (the text occurs
twice, say), the next action applies the rest of that file's hunks with ``git apply``, as an agent falls back: the
policy reads the observations, which is why it walks the whole conversation each turn.

Noise, each drawn per episode with its probability (``wrong_file_prob``, ``failed_edit_prob``,
``wasted_command_prob``): a view of an unrelated file from the first observation's listing first; before the first
edit, an edit whose old text is the hunk with its first line indented one space more (valid code almost never holds
it; the env answers an error); a command that changes nothing (ls, find, the test suite) somewhere before the
submit. Each still resolves. A flailer (``1 - solve_prob``) runs such commands, views, and unreadable replies for
``flail_turns`` turns and submits with no fix: reward 0.

The episode's draws come from a plan seed written into its first reply (``[plan N]``), read back at every later
turn, since each turn's request may carry another seed (as swe_oracle's plan marker).
"""
from __future__ import annotations

import base64
import random
import re
from dataclasses import dataclass
from typing import Callable

from ...envs.swe.instances import Instance, load_dataset
from ...envs.swe_lite.actions import Bash, Replace, Submit, View
from ...errors import RequestError
from .gold_patch import FilePatch, split_patch
from .swe_oracle_options import SweOracleOptions

TASK = re.compile(r"\ATask (\S+) \(([^)\n]*)\)\. Issue:")  # the swe env's first observation
_LISTING = "The repository is your working directory:\n"
_PLAN = re.compile(r"\[plan (\d+)\]")
SOLVER, FLAILER = "I will read the code, then fix it.", "Let me poke around."  # swe_oracle's too (swe_lite)
MAX_EDITS_PER_FILE = 8  # more hunks than this in one file: one git apply, not a turn per hunk
VIEW_MARGIN = 5         # lines shown above and below the region a hunk changes
WASTED_COMMANDS = ("ls -la", "find . -name '*.py' -not -path './.git/*' | head -20", "python -m pytest -q -x 2>&1 | tail -3")
Act = Bash | View | Replace | Submit


@dataclass(frozen=True)
class Step:
    action: Act
    kind: str        # look, edit, apply, noise, submit
    file: int = -1   # edits: the FilePatch's index, and the hunk's
    hunk: int = -1


def is_swe_episode(conversation: list[str]) -> bool:
    return bool(conversation and TASK.match(conversation[0]))


def find_instance(options: SweOracleOptions, first_observation: str) -> Instance:
    """The instance the first observation names, from the options' dataset; RequestError (a 400 naming
    sim.policy.instances) when the file cannot be read or does not hold it: never a wrong answer."""
    task = TASK.match(first_observation)
    if not task:
        raise RequestError("sim.policy.instances", "the first observation names no swe task (Task ID (REPO). Issue: ...)")
    try:
        dataset = load_dataset(options.instances, options.format, options.fields, False)
    except OSError as e:
        raise RequestError("sim.policy.instances", f"cannot read {options.instances!r}: {e}", options.instances) from e
    found = next((i for i in dataset.instances if i.instance_id == task[1]), None)
    if found is None:
        raise RequestError("sim.policy.instances", f"instance {task[1]!r} ({task[2]}) is not among the {len(dataset.instances)} readable "
                                                   f"instances of {options.instances!r}: the oracle has no gold patch for it", task[1])
    try:
        split_patch(found.patch)
    except ValueError as e:
        raise RequestError("sim.policy.instances", f"instance {task[1]!r}: its gold patch cannot be applied by the oracle: {e}", task[1]) from e
    return found


def listed_files(first_observation: str) -> list[str]:
    """The top-level files (not directories) the first observation lists: what a model sees of the repository."""
    _, _, rest = first_observation.partition(_LISTING)
    return [e for e in rest.split("\n", 1)[0].split("  ") if e.strip() and not e.endswith("/") and not e.startswith("…")]


# Text that would end or open an action inside a reply (an xml tag, a tool call's tags): a reply quoting it would
# not parse as the one action it is, so such code goes through base64 instead of being quoted.
_ACTION_MARKUP = re.compile(r"</|<(?:bash|view|replace|submit|old|new|tool_call)\b")


def _git_apply(section: str) -> Bash:
    """The patch text applied in the sandbox's repository: through a quoted heredoc (nothing in it is expanded), or
    base64 when it holds action markup."""
    apply = "git apply --whitespace=nowarn --unidiff-zero /tmp/gold.patch && echo applied"  # zero-context hunks too
    if _ACTION_MARKUP.search(section):
        return Bash(f"echo {base64.b64encode(section.encode()).decode()} | base64 -d > /tmp/gold.patch && {apply}")
    end = "ROLLFLOW_GOLD_EOF"
    while end in section:
        end += "_"
    return Bash(f"cat > /tmp/gold.patch <<'{end}'\n{section}{end}\n{apply}")


def _near_miss(text: str) -> str:
    """``text`` with its first non-blank line indented one space more: what a model gets wrong in an old_str."""
    lines = text.splitlines(True)
    i = next((n for n, line in enumerate(lines) if line.strip()), 0)
    lines[i] = " " + lines[i]
    return "".join(lines)


def _remaining(f: FilePatch, first_hunk: int) -> str:
    """``f``'s section with only its hunks from ``first_hunk`` on (git apply finds them at their shifted lines)."""
    lines = f.section.splitlines(True)
    starts = [n for n, line in enumerate(lines) if line.startswith("@@ ")]
    return "".join(lines[:starts[0]] + lines[starts[first_hunk]:])


def plan(instance: Instance, listing: list[str], options: SweOracleOptions, rng: random.Random) -> list[Step]:
    """A solver's actions in order, noise drawn from ``rng``."""
    files = split_patch(instance.patch)
    wrong_file, failed_edit, wasted = (rng.random() < p for p in (options.wrong_file_prob, options.failed_edit_prob, options.wasted_command_prob))
    steps: list[Step] = []
    if wrong_file:
        touched = {f.path for f in files}
        others = [p for p in listing if p not in touched]
        steps.append(Step(View(rng.choice([p for p in others if p.endswith(".py")] or others or ["setup.py"])), "noise"))
    for n, f in enumerate(files):
        if f.hunks is None or len(f.hunks) > MAX_EDITS_PER_FILE or _ACTION_MARKUP.search(f.section):
            steps.append(Step(_git_apply(f.section), "apply", n))
            continue
        first = f.hunks[0]
        steps.append(Step(View(f.path, max(1, first.start - VIEW_MARGIN), first.start + first.before.count("\n") + VIEW_MARGIN), "look"))
        if failed_edit:
            steps.append(Step(Replace(f.path, _near_miss(first.before), _near_miss(first.after)), "noise"))
            failed_edit = False
        steps += [Step(Replace(f.path, h.before, h.after), "edit", n, k) for k, h in enumerate(f.hunks)]
    if wasted:
        steps.insert(rng.randrange(len(steps) + 1), Step(Bash(rng.choice(WASTED_COMMANDS)), "noise"))
    return [*steps, Step(Submit(), "submit")]


def _next(steps: list[Step], files: list[FilePatch], k: int, previous: Step | None, observation: str) -> tuple[Step, int]:
    """The step after ``previous`` (whose observation is ``observation``) and the plan index after it. A refused edit
    of the plan's is answered by applying the rest of that file's hunks, and the plan goes on past its edits."""
    if previous is not None and previous.kind == "edit" and observation.startswith("Error:"):
        after = max(n for n, s in enumerate(steps) if s.kind == "edit" and s.file == previous.file) + 1
        return Step(_git_apply(_remaining(files[previous.file], previous.hunk)), "apply", previous.file), max(k, after)
    return steps[min(k, len(steps) - 1)], k + 1


def _solve(steps: list[Step], files: list[FilePatch], conversation: list[str]) -> Act:
    """This turn's action: the plan replayed over the conversation so far (each observation answers one reply)."""
    k, previous = 0, None
    turn = len(conversation[1::2])
    for t in range(turn + 1):
        step, k = _next(steps, files, k, previous, conversation[2 * t] if t > 0 else "")
        previous = step
    return previous.action


def reply(options: SweOracleOptions, conversation: list[str], seed: int, render: Callable[[Act], str],
          unreadable: Callable[[random.Random], str]) -> str:
    """The next reply of an swe episode (``is_swe_episode``); ``render`` writes an action in the episode's protocol,
    ``unreadable`` a reply the env cannot parse."""
    instance = find_instance(options, conversation[0])
    replies = conversation[1::2]
    turn = len(replies)
    if turn == 0:
        solver = random.Random(f"{seed}:{instance.instance_id}").random() < options.solve_prob
        plan_seed = random.Random(f"{seed}:{instance.instance_id}:plan").randrange(1 << 30)
        head = f"{SOLVER if solver else FLAILER} [plan {plan_seed}]"
    else:
        solver, found = replies[0].startswith(SOLVER), _PLAN.search(replies[0])
        plan_seed = int(found[1]) if found else 0
        head = "Next." if solver else "Trying."
    rng = random.Random(plan_seed)
    if solver:
        steps = plan(instance, listed_files(conversation[0]), options, rng)
        return f"{head}\n{render(_solve(steps, split_patch(instance.patch), conversation))}"
    if turn >= options.flail_turns:
        return f"Done, I think.\n{render(Submit())}"
    turn_rng = random.Random(f"{plan_seed}:{turn}")
    if turn_rng.random() < options.invalid_prob:
        return f"{head} hmm, maybe {unreadable(turn_rng)}"
    choices = [*(Bash(c) for c in WASTED_COMMANDS), View(split_patch(instance.patch)[0].path)]
    return f"{head}\n{render(turn_rng.choice(choices))}"
