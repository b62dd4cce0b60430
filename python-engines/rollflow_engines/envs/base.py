"""The env interface the env role serves: reset / step / close, text in and text out.

An env instance lives for one episode (one session of the env server):

- ``reset(seed, config) -> observation``: start the episode; the same seed and
  config always give the same episode. ``config`` is an instance of the env's
  ``Config`` model (pydantic, extra keys forbidden), already validated.
- ``info() -> dict``: JSON-able facts about the current state (reported with
  the reset observation; ``step`` returns the same keys and more).
- ``step(action) -> StepResult(observation, reward, done, info)``: ``action``
  is the model's raw text. Text the env cannot read is an *invalid action*,
  never an exception: the env answers with an observation saying so,
  ``info["invalid_action"] = True``, and the reward its config gives for it.
- ``first_messages(observation) -> list | None``: the first turn's chat
  messages in place of one user message of the observation (e.g. the tools
  for the chat template, models/chat.py TOOLS_ROLE); None, the default: the
  observation alone.
- ``close()``: release whatever the env holds; called once, when the session
  is closed or expires.
- ``step_timeout_s() -> float``: the longest one step of this episode runs by
  the env's own limits (commands, grading), reported with /reset so a client
  waits longer than that before it takes the server for lost and retries.

Each env declares ``on_env_loss``: what a client does with an episode whose
session this server lost (it restarted, or the session expired), unless the
run config's ``custom_envs.<tag>.on_env_loss`` says otherwise. ``replay``
(a fresh session at the same seed, the recorded actions applied again) is
right only for an env whose episode is a pure function of seed, config and
actions; an env with outside state (a sandbox, a live service) declares
``restart`` (start the episode over) or ``drop`` (give the trajectory up).
"""
from __future__ import annotations

import re
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict


DEFAULT_STEP_TIMEOUT_S = 5.0


class StepResult(NamedTuple):
    observation: str
    reward: float
    done: bool
    info: dict[str, Any]


class EnvConfig(BaseModel):
    """Base of every env's Config: unknown keys are errors, named by the server as ``config.<key>``."""

    model_config = ConfigDict(extra="forbid")


EnvLossPolicy = Literal["replay", "restart", "drop"]


class BaseEnv(ABC):
    name: ClassVar[str]
    Config: ClassVar[type[EnvConfig]] = EnvConfig
    description: ClassVar[str] = ""
    on_env_loss: ClassVar[EnvLossPolicy]

    @abstractmethod
    def reset(self, seed: int, config: EnvConfig) -> str:
        """Start an episode; return the first observation."""

    @abstractmethod
    def info(self) -> dict[str, Any]:
        """JSON-able facts about the current state."""

    @abstractmethod
    def step(self, action: str) -> StepResult:
        """Apply the model's text; never raises for bad text (see the module doc)."""

    def close(self) -> None:
        """Release resources; the default holds none."""

    def first_messages(self, observation: str) -> list[dict[str, str]] | None:
        """The first turn's chat messages (called after ``reset``, with its observation), sent to the model in
        place of one user message of ``observation``; None (the default): the observation is that message."""
        return None

    def step_timeout_s(self) -> float:
        """Longest one step runs, by the env's limits (called after ``reset``); the default is for envs that
        compute in memory and answer in milliseconds, with room for a loaded server."""
        return DEFAULT_STEP_TIMEOUT_S

    def restore(self, snapshot: dict[str, Any]) -> None:
        """Continue the episode from a snapshot this env saved (``info.snapshot``, envs/snapshots.py), right
        after ``reset`` with the episode's seed and config. Envs that save none cannot restore."""
        raise NotImplementedError(f"env {self.name!r} saves no snapshots")


_OPEN_TAG = re.compile(r"<answer>", re.IGNORECASE)
_CLOSE_TAG = re.compile(r"</answer>", re.IGNORECASE)


def extract_answer(text: str) -> str:
    """The content of the last ``<answer>…</answer>`` in ``text``, or all of ``text``; stripped.

    Pairs are read left to right, each opening tag with the first closing tag after it (a
    non-greedy match). Each tag is found once, so a reply of thousands of unclosed
    ``<answer>`` takes linear time (``re.findall`` with ``(.*?)`` rescans the rest of
    the text from every opening tag: 4.6 s for a 4,000-token reply of them).
    """
    last, pos = None, 0
    while (opened := _OPEN_TAG.search(text, pos)) and (closed := _CLOSE_TAG.search(text, opened.end())):
        last, pos = text[opened.end():closed.start()], closed.end()
    return (text if last is None else last).strip()


def preview(text: str, limit: int = 40) -> str:
    """A short, single-line quote of untrusted text for observations and info."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
