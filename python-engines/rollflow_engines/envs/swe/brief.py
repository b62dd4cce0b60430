"""The swe env's first observation under ``brief``: short enough that two turns of a tiny model fit its context.

tiny:small has 512 positions (one character each); two replies of up to 96 (a replace on a real project's path is
longer than SWE-lite's) and the env's answer to the first (up to ~95 characters: "the old text occurs 0 times in
PATH", or an invalid action) leave about 210 for the first observation. So instead of the issue and the
repository's listing, it says:

- the task id;
- the file to fix, the one the gold patch edits (the only thing taken from the patch: a model that cannot
  look around needs to be told where; SWE-lite's brief issue names its file the same way);
- the function the issue names (the miner's statements open with ```module.function``` misbehaves``, mining/
  statement.py), when it names one;
- one line of the observed failure (the first one the statement quotes, cut to fit);
- one line of the answer format (swe_lite's ``BRIEF_FORMATS``).
"""
from __future__ import annotations

import re

from ..swe_lite.env import BRIEF_FORMATS
from .instances import Instance
from .mining.statement import module_of

BRIEF_MAX_CHARS = 210  # 240 overflowed the second turn of learn-swe-mined-1 after a long error (417 + 96 > 512)
_PATCHED = re.compile(r"^\+\+\+ (?:b/)?(\S+)", re.MULTILINE)
_NAMED = re.compile(r"\A`([\w.]+)`")
_OBSERVED_AFTER = "What I see"


def patched_file(patch: str) -> str | None:
    """The first file the patch writes (its first ``+++`` header); None when it names none (or only /dev/null)."""
    m = _PATCHED.search(patch)
    return m[1] if m and m[1] != "/dev/null" else None


def named_function(statement: str, path: str | None) -> str | None:
    """The function the statement's opening ```module.function``` names, without the module when it is ``path``'s."""
    m = _NAMED.match(statement.strip())
    if not m:
        return None
    module = module_of(path) if path and path.endswith(".py") else None
    return m[1][len(module) + 1:] if module and m[1].startswith(module + ".") else m[1]


def observed_failure(statement: str) -> str:
    """The first line the statement quotes after "What I see"; without that section, its first line."""
    lines = [line.strip() for line in statement.splitlines()]
    after = next((i for i, line in enumerate(lines) if line.startswith(_OBSERVED_AFTER)), None)
    quoted = [line for line in lines[after + 1:] if line] if after is not None else []
    return quoted[0] if quoted else next((line for line in lines if line), "")


def brief_observation(instance: Instance, actions: str = "xml") -> str:
    """At most BRIEF_MAX_CHARS characters (the failure line is cut with "..." to fit: the tiny tokenizer has no "…")."""
    path = patched_file(instance.patch)
    function = named_function(instance.problem_statement, path)
    where = " in " + path if path else ""
    head = f"Task {instance.instance_id}. Fix " + (f"{function}{where}" if function else f"the code{where}") + ". Fails: "
    tail = "\n" + BRIEF_FORMATS[actions]
    failure = observed_failure(instance.problem_statement)
    room = max(0, BRIEF_MAX_CHARS - len(head) - len(tail))
    if len(failure) > room:
        failure = failure[:max(0, room - 3)] + "..."
    return head + failure + tail
