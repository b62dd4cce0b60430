"""The ``swe_lite`` env: fix a planted bug in a small generated Python repository, in a sandbox.

The first observation gives the issue, the repository's files and the action format: the XML-ish tags of
actions.py, with ``actions: tool_calls`` the model's native tool calls (tool_calls.py: the tools go to the
chat template in the first turn's messages, ``first_messages``), or with ``actions: bash`` mini-SWE-agent's
one ```bash block per reply (bash_only.py: commands only, submitted by a command that prints its sentinel).
Every format parses into the same actions, so every check below applies to all. Each step applies one action
in the episode's workspace: ``<bash>`` (the tool bash, a bash block) runs in the bubblewrap sandbox (no network, writes only in the workspace, capped CPU, memory,
processes, time and output), ``<view>`` and ``<replace>`` (view, edit) read and edit files from the server side (paths that lead outside the
workspace are refused). The episode ends at ``<submit/>`` (submit, the bash sentinel) or when a budget runs out (``max_turns``,
or ``max_episode_chars`` of replies: the env sees text, not tokens); then the hidden tests run on
the final files in a fresh sandbox (grading.py): reward 1 when every FAIL_TO_PASS and
PASS_TO_PASS test passes, else 0.

A sandbox that fails is the server's failure, never the model's: the step answers 503 and changes
nothing, so the client's retry applies the action again. A command the model ran that fails or
times out is an ordinary observation.
"""
from __future__ import annotations

import json
import logging
from typing import Any, Literal

from pydantic import Field, field_validator

from ...errors import UnavailableError
from ...models.chat import TOOLS_ROLE
from ...sandbox import Limits, SandboxError, SandboxUnavailable, Workspace, current
from ...sandbox.host_files import WorkspaceFileError, WorkspaceOverLimit, text_files
from .. import snapshots
from ..base import BaseEnv, EnvConfig, StepResult
from ..registry import register_env
from . import bash_only
from .actions import FORMAT, Bash, Invalid, Replace, Submit, View, parse_action
from .grading import Grade, grade
from .tool_calls import FORMATS, PARSERS, TOOLS
from .tasks import TIERS, Task, generate_task, task_for_seed

log = logging.getLogger(__name__)

TRUNCATED = "\n[… truncated: {} more characters]"
MAX_FILE_BYTES = 1 << 20  # the largest file <view> and <replace> read
# What the server walks to snapshot a workspace after a step; past any of these the episode ends (the model's doing).
SNAPSHOT_CAPS = {"max_entries": 5000, "max_bytes": 4 << 20, "max_seconds": 10.0}
# Opening and removing the sandboxes of one step (the command's, the grading's fresh one), beyond their wall limits.
SANDBOX_OVERHEAD_S = 10.0
BRIEF_FORMAT = 'Reply <replace path="FILE"><old>TEXT</old><new>TEXT</new></replace>, then <submit/>.'
BRIEF_TOOLS_FORMAT = "Call edit, then submit."
BRIEF_BASH_FORMAT = f"Reply with one ```bash block; edit with a command, then run echo {bash_only.SENTINEL} to submit."
BRIEF_FORMATS = {"xml": BRIEF_FORMAT, "tool_calls": BRIEF_TOOLS_FORMAT, "bash": BRIEF_BASH_FORMAT}
# The tool-call format of actions: tool_calls. One for now (tool_calls.PARSERS lists those there are): a
# setting to choose it would have a single value, so it comes when a second format does.
TOOL_CALL_FORMAT = "hermes"


def brief_observation(task: Task, actions: str = "xml") -> str:
    """The first observation under ``brief``: the task and its issue (which names the file), and how to answer."""
    return f"Task {task.id}. Issue: {task.issue}\n{BRIEF_FORMATS[actions]}"


def replaced(path: str) -> str:
    """The observation of a replace that applied."""
    return f"Replaced 1 occurrence in {path}."


class EpisodeConfig(EnvConfig):
    """What every agentic repository env (swe_lite, swe) takes: the action format, budgets and time limits."""

    actions: Literal["xml", "tool_calls", "bash"] = Field(default="xml", description=
        "How the model writes its actions: xml, the <bash>/<view>/<replace>/<submit/> tags; tool_calls, its chat template's "
        "native tool calls (Hermes/Qwen <tool_call> JSON) to the tools bash, view, edit and submit, which the first turn "
        "hands to the chat template (needs a model whose chat template renders tools); bash, mini-SWE-agent's scaffold: one "
        f"```bash block per reply, submitted by a command whose output's first line is {bash_only.SENTINEL}.")
    max_turns: int = Field(default=30, ge=1, le=50, description="Actions before the episode is graded as it stands.")
    max_episode_chars: int = Field(default=200_000, ge=1, description="Characters of replies in the episode before it is graded as it stands (the env sees text, not tokens).")
    observation_chars: int = Field(default=4000, ge=200, description="Longest observation; longer ones are cut with a marker.")
    command_timeout_s: float = Field(default=20.0, gt=0, le=600, description="Wall-clock limit of one <bash> command.")
    grading_timeout_s: float = Field(default=120.0, gt=0, le=1800, description="Wall-clock limit of the hidden tests' run.")
    brief: bool = Field(default=False, description="A short first observation: the task id and where the issue is (swe_lite: the issue, "
                                                   "which names the file; swe: brief.py), with a one-line reminder of replace and submit, "
                                                   "and no format text after an invalid action: for models with a short context.")


class SweLiteConfig(EpisodeConfig):
    tiers: list[int] = Field(default_factory=lambda: list(TIERS), min_length=1, description="Difficulty tiers the seed draws tasks from (1, 2, 3).")
    task: str | None = Field(default=None, description="One task id (t1-000 … t3-019) for every seed, instead of drawing by seed.")
    tasks: list[str] | None = Field(default=None, min_length=1, description="Task ids the seed walks, instead of the tiers' (e.g. a training "
                                                                              "split and a held-out validation split).")

    @field_validator("tiers")
    @classmethod
    def _known_tiers(cls, given: list[int]) -> list[int]:
        unknown = [t for t in given if t not in TIERS]
        if unknown:
            raise ValueError(f"tier {unknown[0]} does not exist; expected tiers among {list(TIERS)}")
        return given

    @field_validator("task", "tasks")
    @classmethod
    def _known_ids(cls, given):
        for task_id in [given] if isinstance(given, str) else given or []:
            generate_task(task_id)  # ValueError naming the ids that exist
        return given


def truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + TRUNCATED.format(len(text) - limit)


def _sandbox_failed(e: Exception) -> UnavailableError:
    return UnavailableError("sandbox", f"the env server's sandbox failed: {e}", None)


@register_env
class SweLiteEnv(BaseEnv):
    name = "swe_lite"
    Config = SweLiteConfig
    description = "Fix a planted bug in a small Python repository (bash, view, replace, submit); hidden tests decide."
    # Tasks and commands are deterministic, so replaying the recorded actions on a fresh workspace rebuilds the episode.
    on_env_loss = "replay"

    def _begin_episode(self) -> None:
        """The counts and flags of a new episode (the swe env's reset shares them)."""
        self.turn = self.invalid = self.chars = self.sandbox_errors = 0
        self.grade_result: Grade | None = None
        self.submitted = self.over_limit = False
        self.snapshot: str | None = None
        self.command_unsaved = False  # a command ran whose snapshot could not be saved (SnapshotNotSaved)
        self.stored_files: tuple[str, dict[str, str]] | None = None  # the last snapshot written: its id and files

    def reset(self, seed: int, config: SweLiteConfig) -> str:
        self.config = config
        self.task: Task = (generate_task(config.task) if config.task else generate_task(config.tasks[seed % len(config.tasks)]) if config.tasks
                           else task_for_seed(seed, tuple(config.tiers)))
        self._begin_episode()
        try:
            self.ws: Workspace | None = current().open(files=self.task.files)
        except (SandboxError, SandboxUnavailable) as e:
            raise _sandbox_failed(e) from e
        if config.brief:
            return brief_observation(self.task, config.actions)
        listing = "\n".join(f"  {path}" for path in sorted(self.task.files))
        return (f"Task {self.task.id}. Issue: {self.task.issue}\n\nThe repository (your working directory):\n{listing}\n\n"
                f"Fix the issue in the code; hidden tests will check it when you submit.\n{self._format}")

    @property
    def _format(self) -> str:
        return {"xml": FORMAT, "tool_calls": FORMATS[TOOL_CALL_FORMAT], "bash": bash_only.BASH_FORMAT}[self.config.actions]

    def _parse(self, reply: str):
        return {"xml": parse_action, "tool_calls": PARSERS[TOOL_CALL_FORMAT], "bash": bash_only.parse_bash}[self.config.actions](reply)

    def first_messages(self, observation: str) -> list[dict[str, str]] | None:
        """With tool calls: the tools (for the chat template's ``tools=``), then the observation as the user's message."""
        if self.config.actions != "tool_calls":
            return None
        return [{"role": TOOLS_ROLE, "content": json.dumps(TOOLS)}, {"role": "user", "content": observation}]

    def step_timeout_s(self) -> float:
        """A step runs at most one command, then either the grading or a snapshot walk: their limits summed, and the sandboxes' setup."""
        return self.config.command_timeout_s + self.config.grading_timeout_s + SNAPSHOT_CAPS["max_seconds"] + SANDBOX_OVERHEAD_S

    @property
    def over(self) -> bool:
        """Graded, or ended by the workspace caps: nothing more happens in this episode."""
        return self.grade_result is not None or self.over_limit

    def info(self) -> dict[str, Any]:
        g = self.grade_result
        return {"task": self.task.id, "tier": self.task.tier, "turn": self.turn, "invalid_actions": self.invalid,
                "sandbox_errors": self.sandbox_errors, "submitted": self.submitted,
                "tests_passed_fraction": g.fraction if g else None, "success": bool(g and g.resolved),
                "reward_tampered": bool(g and g.tampered), "workspace_over_limit": self.over_limit}

    def step(self, action: str) -> StepResult:
        parsed = self._parse(action)
        try:  # the action's effects first: a sandbox failure must leave the episode as it was
            observation, done = self._apply(parsed)
            over_budget = not done and (self.turn + 1 >= self.config.max_turns or self.chars + len(action) >= self.config.max_episode_chars)
            grade_now = done or over_budget
            result = self._grade() if grade_now else None
        except (SandboxError, SandboxUnavailable) as e:
            self.sandbox_errors += 1
            raise _sandbox_failed(e) from e
        self.turn += 1
        self.chars += len(action)
        self.invalid += isinstance(parsed, Invalid)
        self.submitted = done  # only a submission ends an episode in _apply: <submit/>, submit, or the bash sentinel
        if result is not None:
            self.grade_result = result
            ended = "Submitted." if self.submitted else "Out of budget (turns or reply characters): graded as it stands."
            observation = f"{ended} Hidden tests: {'all passed' if result.resolved else 'not all passed'}."
        saved = None
        # After a command the workspace may have changed anyhow: save it. An edit is the server's own write, exact from
        # the workspace before it, so it saves nothing and the client sends it again after a restore, as a view: a
        # snapshot would cost more than the edit (issue 25's snapshot cost per step). After a command whose snapshot
        # could not be saved, every step tries again: until one is, a restore would run that command a second time.
        if result is None and (isinstance(parsed, Bash) or self.command_unsaved):
            try:
                saved = self._snapshot_after_step()
            except WorkspaceOverLimit as e:  # the model filled its workspace past what the server will read: its outcome
                self.over_limit = True
                observation = f"Episode ended: {e}. Nothing was graded."
        # Only the step that saved a snapshot names it: the client takes it to hold every action up to that step and,
        # after a restore, sends the later ones again (edits, views and unreadable replies run no command, but they count
        # turns, characters and invalid actions, which a snapshot named on their own steps would have lost).
        info = {**self.info(), "invalid_action": isinstance(parsed, Invalid), **({"snapshot": saved} if saved else {})}
        reward = 1.0 if result is not None and result.resolved else 0.0
        return StepResult(truncate(observation, self.config.observation_chars), reward, self.over, info)

    def _grading_limits(self) -> Limits:
        return Limits(wall_s=self.config.grading_timeout_s, cpu_s=int(self.config.grading_timeout_s))

    def _grade(self) -> Grade:
        """The hidden tests on the workspace as it stands; SandboxError when the sandbox fails."""
        return grade(self.task, self.ws, self._grading_limits())

    def _run(self, command: str | list[str], limits: Limits):
        """One <bash> command in the episode's sandbox (a str runs with /bin/sh -c, a list is the argv)."""
        return self.ws.run(command, limits=limits)

    def _apply(self, action) -> tuple[str, bool]:
        """The observation of ``action`` and whether it ends the episode; SandboxError when the sandbox fails."""
        if isinstance(action, Invalid):  # brief: the format was in the first observation, and the context is short
            return f"Invalid action: {action.why}" + ("" if self.config.brief else f"\n{self._format}"), False
        if isinstance(action, Submit):
            return "", True
        if isinstance(action, Bash) and self.config.actions == "bash":
            return self._run_bash_only(action.command)
        if isinstance(action, Bash):
            r = self._run(action.command, self._command_limits())
            status = "timed out" if r.timed_out else f"exit {r.exit_code}" if r.exit_code is not None else f"killed by signal {r.signal}"
            return f"[{status}]\n{r.stdout}{r.stderr}", False
        try:  # the path and what lies there are the model's: a link, a FIFO, a huge file are refused by name
            text = self.ws.read_text(action.path, MAX_FILE_BYTES)
        except WorkspaceFileError as e:
            return f"Error: {e}.", False
        if isinstance(action, View):
            lines = text.splitlines()
            start, end = action.start or 1, min(action.end or len(lines), len(lines))
            return "\n".join(f"{n:4d}  {lines[n - 1]}" for n in range(start, end + 1)) or f"({action.path} has no lines {start}–{end})", False
        assert isinstance(action, Replace)
        count = text.count(action.old)
        if count != 1:
            return f"Error: the old text occurs {count} times in {action.path}; it must occur exactly once.", False
        try:
            self.ws.write_files({action.path: text.replace(action.old, action.new)})
        except WorkspaceFileError as e:
            return f"Error: {e}.", False
        return replaced(action.path), False

    def _command_limits(self) -> Limits:
        return Limits(wall_s=self.config.command_timeout_s, cpu_s=max(1, int(self.config.command_timeout_s)))

    def _run_bash_only(self, command: str) -> tuple[str, bool]:
        """actions: bash: the command through bash in the same sandbox, then mini-SWE-agent's observation, or the
        submission when its output starts with the sentinel (bash_only.py)."""
        r = self._run([*bash_only.INTERPRETER, command], self._command_limits())
        if bash_only.submits(r):
            return "", True
        return bash_only.observation(r, self.config.observation_chars, self.config.command_timeout_s), False

    # ---- snapshots: the workspace and the counters after each step that runs a command

    def _counters(self) -> dict[str, int]:
        return {"turn": self.turn, "invalid": self.invalid, "chars": self.chars, "sandbox_errors": self.sandbox_errors}

    def _restore_counters(self, counters: dict[str, int]) -> None:
        """The counts a snapshot saved (_counters), back in place."""
        self.turn, self.invalid, self.chars, self.sandbox_errors = counters["turn"], counters["invalid"], counters["chars"], counters["sandbox_errors"]

    def _snapshot_after_step(self) -> str | None:
        """A snapshot in place of the episode's last; its id, or None when the store refused it. The step is answered
        either way: its action ran, and failing the step would have a retry run it again. Its info then names no
        snapshot, so the client keeps the last one it was told of, which stays stored (not removed here) and restores."""
        try:
            saved = self._save_snapshot()
        except snapshots.SnapshotNotSaved as e:
            log.warning("%s %s: step answered without a snapshot: %s", self.name, self._episode_id, e)
            self.command_unsaved = True  # self.snapshot stays the client's: the next one saved replaces it
            return None
        previous, self.snapshot, self.command_unsaved = self.snapshot, saved, False
        if snapshots.stored_id(previous) != snapshots.stored_id(saved):  # a reference to the one stored keeps it
            self._remove_snapshot(previous)
        return saved

    @property
    def _episode_id(self) -> str:
        return self.task.id

    def _save_snapshot(self) -> str:
        """The workspace's files and the counters, stored; the snapshot's id (SnapshotNotSaved when the store refuses).
        Files the same as the last snapshot's (the command changed none) are not written again: the id is a
        reference to that snapshot with these counters (snapshots.reference)."""
        files = text_files(self.ws.path, **SNAPSHOT_CAPS)
        if self.stored_files is not None and self.stored_files[1] == files:
            return snapshots.reference(self.stored_files[0], self._counters())
        saved = snapshots.save({"task": self.task.id, "counters": self._counters(), "files": files})
        self.stored_files = (saved, files)
        return saved

    @staticmethod
    def _remove_snapshot(snapshot: str | None) -> None:
        snapshots.remove(snapshot)

    def restore(self, snapshot: dict[str, Any]) -> None:
        if snapshot.get("task") != self.task.id:
            raise ValueError(f"the snapshot is of task {snapshot.get('task')!r}, not of this episode's {self.task.id!r}")
        self.ws.remove()
        try:
            self.ws = current().open(files=snapshot["files"])
        except (SandboxError, SandboxUnavailable) as e:
            raise _sandbox_failed(e) from e
        self._restore_counters(snapshot["counters"])

    def close(self) -> None:
        if getattr(self, "over", False):  # over: nobody resumes it (an unfinished episode's snapshot outlives its session)
            snapshots.remove(getattr(self, "snapshot", None))
        if getattr(self, "ws", None) is not None:
            self.ws.remove()
            self.ws = None
