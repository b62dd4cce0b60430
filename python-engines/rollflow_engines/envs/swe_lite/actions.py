"""The SWE-lite action format: exactly one action per reply, free text around it is the model's thinking.

    <bash>COMMAND</bash>                                   run a shell command in the repository
    <view>PATH</view>                                      show a file with line numbers
    <view start="10" end="40">PATH</view>                  show lines 10–40 of it
    <replace path="PATH"><old>TEXT</old><new>TEXT</new></replace>
                                                           replace TEXT, which must occur exactly once
    <submit/>                                              end the episode; the hidden tests decide

Anything else (no action, two actions, a tag left open, a bad line range) is an ``Invalid`` action
whose ``why`` tells the model what was expected; it is never an exception.
"""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Bash:
    command: str


@dataclass(frozen=True)
class View:
    path: str
    start: int | None = None
    end: int | None = None


@dataclass(frozen=True)
class Replace:
    path: str
    old: str
    new: str


@dataclass(frozen=True)
class Submit:
    pass


@dataclass(frozen=True)
class Invalid:
    why: str


Action = Bash | View | Replace | Submit | Invalid

FORMAT = """Reply with exactly one action; text around it is for your own thinking.
  <bash>COMMAND</bash>                              run a shell command in the repository (no network)
  <view>PATH</view>                                 show a file with line numbers
  <view start="10" end="40">PATH</view>             show some of its lines
  <replace path="PATH"><old>TEXT</old><new>TEXT</new></replace>
                                                    replace TEXT (it must occur exactly once) in PATH
  <submit/>                                         finish: hidden tests decide whether the issue is fixed"""

_ACTION = re.compile(
    r"<bash>(?P<bash>.*?)</bash>"
    r"|<view(?P<range>\s+start=\"(?P<start>\d+)\"\s+end=\"(?P<end>\d+)\")?\s*>(?P<view>.*?)</view>"
    r"|<replace\s+path=\"(?P<rpath>[^\"]+)\"\s*>\s*<old>(?P<old>.*?)</old>\s*<new>(?P<new>.*?)</new>\s*</replace>"
    r"|<submit\s*/>|<submit>\s*</submit>",
    re.DOTALL,
)
_OPENERS = re.compile(r"<(bash|view|replace|submit)\b")
# The pattern's lazy matches rescan the rest of the reply from every unclosed opening tag, so a reply
# is read only this far: longer replies are invalid actions, never seconds of regex work.
MAX_REPLY_CHARS = 20_000


def _unsendable(command: str) -> str | None:
    """Why ``command`` cannot be handed to a process (an argv holds no NUL, and must encode), or None."""
    if "\x00" in command:
        return "holds a NUL byte, which no command line can carry"
    try:
        command.encode("utf-8")
    except UnicodeEncodeError:
        return "holds characters that are not valid text (lone surrogates)"
    return None


def parse_action(reply: str) -> Action:
    if len(reply) > MAX_REPLY_CHARS:
        return Invalid(f"the reply is {len(reply)} characters long; keep it under {MAX_REPLY_CHARS} with one action.")
    found = list(_ACTION.finditer(reply))
    if len(found) > 1:
        return Invalid(f"{len(found)} actions in one reply; send exactly one per reply.")
    if not found:
        opened = _OPENERS.search(reply)
        if opened:
            return Invalid(f"the <{opened[1]}> action is not complete or not well formed.")
        return Invalid("no action found.")
    m = found[0]
    if m["bash"] is not None:
        command = m["bash"].strip()
        if not command:
            return Invalid("<bash> holds no command.")
        return Invalid(f"<bash> {unsendable}.") if (unsendable := _unsendable(command)) else Bash(command)
    if m["view"] is not None:
        path = m["view"].strip()
        if not path:
            return Invalid("<view> names no file.")
        if m["range"]:
            start, end = int(m["start"]), int(m["end"])
            if not 1 <= start <= end:
                return Invalid(f"<view> line range {start}–{end}: start must be at least 1 and at most end.")
            return View(path, start, end)
        return View(path)
    if m["rpath"] is not None:
        if m["old"] == "":
            return Invalid("<old> is empty: say which text to replace.")
        return Replace(m["rpath"].strip(), m["old"], m["new"])
    return Submit()
