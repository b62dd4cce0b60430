"""The bash-only protocol (``actions: bash``): mini-SWE-agent's scaffold, where every action is one shell command.

The facts below are mini-swe-agent 2.4.6's (PyPI), read from its text-based action parser, its observation
template and its environments' submission check; docs/swe-lite.md "Bash only" says where rollflow differs and why.

- A reply holds exactly one fenced block of language ``bash``: the command. Text around it is the model's
  thinking; fenced blocks of other languages are text too. No bash block, two of them, one left open or one
  with no command is an ``Invalid`` action whose ``why`` says so (mini: a format error, sent back to the model).
- The command runs with ``bash -c`` in the episode's sandbox, each in a fresh shell (a ``cd`` does not carry over).
- The observation shows its return code and its output; output longer than the observation allows keeps its
  head and its tail with the count of characters left out between them (``observation``).
- A command whose output's first line is ``SENTINEL`` and whose return code is 0 submits: the episode ends and
  is graded. The command runs first, like any other, so what it did stays done; the sentinel counts only as the
  first line of what the command printed, never as text of the reply or of a file the command did not print.

Fences are read as Markdown reads them, a line at a time, so the parse is linear in the reply: a fence opens on
a line of three or more backticks and an info string whose first word is the language, and closes on a line of
at least as many backticks and nothing else; anything between, fences of other lengths included, is content.
"""
from __future__ import annotations

import re

from ...sandbox import RunResult
from .actions import MAX_REPLY_CHARS, Bash, Invalid, _unsendable

LANGUAGE = "bash"
SENTINEL = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
INTERPRETER = ("bash", "-c")

BASH_FORMAT = (f"Reply with your reasoning and exactly one shell command in a ```{LANGUAGE} fenced block:\n"
               f"```{LANGUAGE}\nCOMMAND\n```\n"
               f"Each command runs in a fresh shell in the repository (no network). When the issue is fixed, run\n"
               f"```{LANGUAGE}\necho {SENTINEL}\n```\n"
               f"alone: a command whose output starts with that line (and that exits 0) submits; hidden tests decide.")

_OPEN = re.compile(r"^[ \t]*(`{3,})[ \t]*([^`]*)$")
_CLOSE = re.compile(r"^[ \t]*(`{3,})[ \t]*$")


def _blocks(reply: str) -> tuple[list[tuple[str, str]], str | None]:
    """(every closed fenced block as (language, content), the language of a block left open or None)."""
    blocks: list[tuple[str, str]] = []
    fence, language, content = "", "", []
    for line in reply.split("\n"):
        if not fence:
            if opened := _OPEN.match(line):
                fence, language, content = opened[1], (opened[2].split() or [""])[0], []
            continue
        closed = _CLOSE.match(line)
        if closed and len(closed[1]) >= len(fence):
            blocks.append((language, "\n".join(content)))
            fence = ""
        else:
            content.append(line)
    return blocks, (language if fence else None)


def parse_bash(reply: str) -> Bash | Invalid:
    """The one ```bash block of ``reply`` as a Bash action; anything else an Invalid naming what was wrong."""
    if len(reply) > MAX_REPLY_CHARS:
        return Invalid(f"the reply is {len(reply)} characters long; keep it under {MAX_REPLY_CHARS} with one ```{LANGUAGE} block.")
    blocks, left_open = _blocks(reply)
    commands = [content for language, content in blocks if language == LANGUAGE]
    if left_open == LANGUAGE:
        return Invalid(f"a ```{LANGUAGE} block is not closed: end it with a line of ``` alone.")
    if len(commands) > 1:
        return Invalid(f"found {len(commands)} ```{LANGUAGE} blocks; send exactly one command per reply (join steps with && if they belong together).")
    if not commands:
        others = sorted({language or "(no language)" for language, _ in blocks})
        seen = f" (found fenced blocks of {', '.join(repr(o[:20]) for o in others[:5])}, which are not commands)" if others else ""
        return Invalid(f"no ```{LANGUAGE} block found{seen}.")
    command = commands[0].strip()
    if not command:
        return Invalid(f"the ```{LANGUAGE} block holds no command.")
    return Invalid(f"the command {unsendable}.") if (unsendable := _unsendable(command)) else Bash(command)


def output_of(result: RunResult) -> str:
    """What the command printed: stdout, then stderr (the sandbox keeps them apart; mini-swe-agent merges them)."""
    return result.stdout + result.stderr


def submits(result: RunResult) -> bool:
    """The command printed the sentinel as its first line (leading blank lines and spaces aside) and exited 0."""
    lines = output_of(result).lstrip().splitlines()
    return result.exit_code == 0 and bool(lines) and lines[0].strip() == SENTINEL


def return_code(result: RunResult) -> int:
    """The command's exit code; -N when signal N ended it (as Python's subprocess reports it), -1 for a timeout."""
    if result.timed_out:
        return -1
    if result.exit_code is not None:
        return result.exit_code
    return -result.signal if result.signal else -1


_LONG = ("<returncode>{code}</returncode>\n{exception}<warning>\nThe output was too long to show whole: {elided} characters "
         "are left out between its head and its tail. Print less (head, tail, grep, sed -n) or write it to a file and search "
         "that.\n</warning>\n<output_head>\n{head}\n</output_head>\n<elided_chars>\n{elided} characters elided\n</elided_chars>\n"
         "<output_tail>\n{tail}\n</output_tail>")


def observation(result: RunResult, limit: int, timeout_s: float) -> str:
    """The command's return code and output, in at most about ``limit`` characters: the whole output when it
    fits, else its head and tail (equal shares of what the limit leaves) and how much was left out."""
    code, output = return_code(result), output_of(result)
    exception = f"<exception>the command timed out after {timeout_s:g} s and was killed</exception>\n" if result.timed_out else ""
    whole = f"<returncode>{code}</returncode>\n{exception}<output>\n{output}</output>"
    if len(whole) <= limit:
        return whole
    frame = len(_LONG.format(code=code, exception=exception, elided=len(output), head="", tail=""))
    keep = max(0, limit - frame) // 2
    elided = len(output) - 2 * keep
    return _LONG.format(code=code, exception=exception, elided=elided, head=output[:keep], tail=output[len(output) - keep:] if keep else "")
