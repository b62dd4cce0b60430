"""The problem statement of a mined task, written from how the failing tests failed, never from their code.

What it says: the module and (when public) the function that misbehaves, and up to three observations taken
from pytest's failure messages (the exception line, or an assertion with pytest's introspection of the
values: ``assert 3 == 2.5``, ``+ where 3 = median([1, 2, 3, 4])``). What it never says: the test's name or
source lines (the JUnit ``message`` attribute holds the exception, not the traceback), the mutation, the
line, or the fix.
"""
from __future__ import annotations

import re

ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")  # a repr's memory address (<Foo object at 0x7f…>) differs on every run
MAX_OBSERVATIONS = 3
MAX_LINE = 240
MAX_LINES = 4


def _clean(message: str) -> str:
    """The message's first line and pytest's ``where`` lines; its string diff lines (``- a``, ``? ^``, ``+ b``) are noise."""
    lines = [ADDRESS.sub("0x…", line.rstrip()) for line in message.strip().splitlines() if line.strip()]
    lines = lines[:1] + [line for line in lines[1:] if "where" in line]
    lines = [line if len(line) <= MAX_LINE else line[:MAX_LINE] + " …" for line in lines[:MAX_LINES]]
    return "\n".join(lines)


def is_public(qualified: str) -> bool:
    return all(not part.startswith("_") or (part.startswith("__") and part.endswith("__")) for part in qualified.split("."))


def module_of(path: str) -> str:
    dotted = path[:-3].replace("/", ".")
    return dotted[: -len(".__init__")] if dotted.endswith(".__init__") else dotted


def write(project: str, path: str, function: str, messages: list[str], failing: int) -> str:
    """An issue-like paragraph: where (module, public function), what is observed, how much breaks."""
    module = module_of(path)
    where = f"`{module}.{function}`" if is_public(function) else f"code in `{module}`"
    seen: list[str] = []
    for message in messages:
        text = _clean(message)
        if text and text not in seen:
            seen.append(text)
        if len(seen) == MAX_OBSERVATIONS:
            break
    lines = [f"{where} misbehaves in {project}: {failing} of the project's tests that exercise it fail since a recent change, "
             f"while the rest of the suite passes."]
    if seen:
        lines.append("")
        lines.append("What I see (the errors or mismatched values reported):")
        for text in seen:
            lines.append("")
            lines.append("\n".join("    " + line for line in text.splitlines()))
    else:
        lines.append("The failures report no message.")
    lines.append("")
    lines.append("The expected behaviour is the documented one, as before the change. Please fix the code (not the tests).")
    return "\n".join(lines)
