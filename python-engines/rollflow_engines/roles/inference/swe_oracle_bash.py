"""The scripted policy (swe_oracle.py) in the bash scaffold (``actions: bash``, envs/swe_lite/bash_only.py).

The oracle plans in actions and writes them as XML; an episode whose first observation asks for one ```bash
block gets each reply translated here: the same text before the action (the plan marker later turns read back),
then the action as the command that does it. A view is ``cat -n`` (``sed -n`` for a line range), an edit a
Python script that replaces the old text only where it occurs exactly once (else it exits 1 saying how often, as
``<replace>`` refuses), a submit the sentinel. A reply that holds no readable XML action (a flailer's unreadable
one) is left as it is: it holds no ```bash block either, so it stays an invalid action. Kept apart from
swe_oracle.py so that the oracle's own plans stay in one place.
"""
from __future__ import annotations

import shlex

from ...envs.swe_lite import actions
from ...envs.swe_lite.actions import Bash, Replace, Submit, View
from ...envs.swe_lite.bash_only import LANGUAGE, SENTINEL

_EDIT = """python3 - <<'EOF_ORACLE'
import pathlib, sys
path, old, new = pathlib.Path({path!r}), {old!r}, {new!r}
text = path.read_text()
if text.count(old) != 1:
    sys.exit(f"the old text occurs {{text.count(old)}} times in {{path}}; it must occur exactly once")
path.write_text(text.replace(old, new))
print(f"Replaced 1 occurrence in {{path}}.")
EOF_ORACLE"""


def asks_for_bash(first_observation: str) -> bool:
    """The episode's first observation names the bash scaffold's block and its sentinel (in full and in brief)."""
    return f"```{LANGUAGE}" in first_observation and SENTINEL in first_observation


def command_of(action: Bash | View | Replace | Submit) -> str:
    """The shell command that does ``action`` in the repository."""
    if isinstance(action, Bash):
        return action.command
    if isinstance(action, View):
        if action.start is not None:
            return f"sed -n '{action.start},{action.end}p' {shlex.quote(action.path)} | cat -n"
        return f"cat -n {shlex.quote(action.path)}"
    if isinstance(action, Replace):
        return _EDIT.format(path=action.path, old=action.old, new=action.new)
    if isinstance(action, Submit):
        return f"echo {SENTINEL}"
    raise TypeError(f"no command for {action!r}")


def translate(xml_reply: str) -> str:
    """``xml_reply`` (text, then one XML action) with its action as one ```bash block; unchanged without one."""
    found = actions._ACTION.search(xml_reply)
    parsed = actions.parse_action(xml_reply)
    if found is None or isinstance(parsed, actions.Invalid):
        return xml_reply
    return f"{xml_reply[:found.start()]}```{LANGUAGE}\n{command_of(parsed)}\n```"
