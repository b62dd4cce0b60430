"""SWE-lite's actions as native tool calls: the tools' schemas and the parsers of the model's calls.

With ``actions: tool_calls`` the tools below are handed to the model's chat template (``apply_chat_template(
tools=TOOLS)``, as OpenAI-format function schemas) and the model answers in its own call format. The parser
turns one reply into the same ``Action`` values the XML format gives (actions.py), so every check the env
makes on a path or an edit (sandbox/host_files.py, SweLiteEnv._apply) applies to both formats alike.

Parsers are pluggable by name (``PARSERS``); the one there is ``hermes``, the format of Qwen2.5's and
Qwen3's templates (and of Hermes models):

    <tool_call>
    {"name": "bash", "arguments": {"command": "ls"}}
    </tool_call>

The reply is the policy's, so it is read as hostile: exactly one call per reply, the JSON read with a
length cap and no duplicate keys, and each argument checked against its tool's schema (the schema is the
one source of truth: the checks are driven by it; every argument is a string or an integer, so anything
nested is a mistyped argument). Quotes of the model's text in ``why`` are cut short. Anything else is an
``Invalid`` action whose ``why`` names what was wrong and what was expected; never an exception.
"""
from __future__ import annotations

import json
from typing import Any, Callable

from .actions import MAX_REPLY_CHARS, Action, Bash, Invalid, Replace, Submit, View, _unsendable


def _function(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": properties, "required": required, "additionalProperties": False}}}


# ASCII only: the tiny models' character-level tokenizer has no other characters (models/tiny.py).
TOOLS: list[dict[str, Any]] = [
    _function("bash", "Run a shell command in the repository (your working directory). No network.",
              {"command": {"type": "string", "description": "The command, run with /bin/sh -c."}}, ["command"]),
    _function("view", "Show a file of the repository with line numbers, or some of its lines.",
              {"path": {"type": "string", "description": "The file, relative to the repository."},
               "start": {"type": "integer", "description": "First line to show (from 1); default 1."},
               "end": {"type": "integer", "description": "Last line to show; default the file's last."}}, ["path"]),
    _function("edit", "Replace text in a file: old_str must occur in it exactly once.",
              {"path": {"type": "string", "description": "The file, relative to the repository."},
               "old_str": {"type": "string", "description": "The exact text to replace (not empty)."},
               "new_str": {"type": "string", "description": "The text to put in its place."}}, ["path", "old_str", "new_str"]),
    _function("submit", "Finish the episode: hidden tests decide whether the issue is fixed.", {}, []),
]
_SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
_JSON_TYPES = {"string": (str,), "integer": (int,)}

OPEN, CLOSE = "<tool_call>", "</tool_call>"
HERMES_FORMAT = (f'Call exactly one tool per reply, as {OPEN}{{"name": TOOL, "arguments": {{...}}}}{CLOSE}; '
                 f"the tools are {', '.join(_SCHEMAS)}; text around the call is for your own thinking.")


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json.loads keeps the last of two equal keys; a call that says ``name`` twice is ambiguous, so it is refused."""
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise _DuplicateKey(f"the key {key[:40]!r} appears twice")
        seen[key] = value
    return seen


def _type_name(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array", dict: "an object",
            type(None): "null"}.get(type(value), type(value).__name__)


def _is_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_arguments(tool: str, arguments: Any) -> str | None:
    """Why ``arguments`` do not fit ``tool``'s schema (missing, extra or mistyped arguments, text that cannot
    be sent), or None. Driven by TOOLS, so what the model is told and what is checked cannot drift apart."""
    schema = _SCHEMAS[tool]
    properties, required = schema["properties"], schema["required"]
    expected = ", ".join(f"{k} ({v['type']})" for k, v in properties.items()) or "no arguments"
    if not isinstance(arguments, dict):
        return f"the arguments of {tool} are {_type_name(arguments)}; expected a JSON object: {expected}"
    missing = [k for k in required if k not in arguments]
    if missing:
        return f"{tool} is missing argument {', '.join(missing)}; expected {expected}"
    extra = sorted(k for k in arguments if k not in properties)
    if extra:
        return f"{tool} has no argument {', '.join(repr(k[:40]) for k in extra[:5])}; expected {expected}"
    for key, value in arguments.items():
        want = properties[key]["type"]
        # bool is an int in Python, never in JSON Schema: true is not a line number.
        if not isinstance(value, _JSON_TYPES[want]) or isinstance(value, bool):
            return f"argument {key} of {tool} is {_type_name(value)}; expected {'an' if want[0] in 'aeiou' else 'a'} {want}"
        if isinstance(value, str) and not _is_text(value):
            # A JSON escape (\ud800) makes a lone surrogate out of plain ASCII; no file or command can hold one.
            return f"argument {key} of {tool} holds characters that are not valid text (lone surrogates)"
    return None


def _action(tool: str, args: dict[str, Any]) -> Action:
    """The Action of a call whose arguments fit the schema; the checks the XML format makes on the same action."""
    if tool == "bash":
        command = args["command"].strip()
        if not command:
            return Invalid("bash: the command is empty.")
        return Invalid(f"bash: the command {unsendable}.") if (unsendable := _unsendable(command)) else Bash(command)
    if tool == "view":
        path = args["path"].strip()
        if not path:
            return Invalid("view: path names no file.")
        start, end = args.get("start"), args.get("end")
        if start is not None and start < 1 or end is not None and end < max(1, start or 1):
            return Invalid(f"view: lines {start}-{end}: start must be at least 1 and at most end.")
        return View(path, start, end)
    if tool == "edit":
        if args["old_str"] == "":
            return Invalid("edit: old_str is empty: say which text to replace.")
        return Replace(args["path"].strip(), args["old_str"], args["new_str"])
    return Submit()


def hermes_call(tool: str, arguments: dict[str, Any]) -> str:
    """One call in the Hermes/Qwen format, as Qwen2.5's template renders an assistant's tool call. For scripted
    policies (roles/inference/swe_oracle.py): a call that does not fit TOOLS raises, so a renamed tool or
    argument breaks the caller's tests instead of turning its replies into invalid actions."""
    if tool not in _SCHEMAS:
        raise ValueError(f"unknown tool {tool!r}; the tools are {', '.join(_SCHEMAS)}")
    if why := check_arguments(tool, arguments):
        raise ValueError(why)
    return f"{OPEN}\n{json.dumps({'name': tool, 'arguments': arguments})}\n{CLOSE}"


def call_of(action: Bash | View | Replace | Submit) -> str:
    """The call parse_hermes reads back as ``action``: the inverse of ``_action``, kept beside it."""
    if isinstance(action, Bash):
        return hermes_call("bash", {"command": action.command})
    if isinstance(action, View):
        lines = {k: v for k, v in (("start", action.start), ("end", action.end)) if v is not None}
        return hermes_call("view", {"path": action.path, **lines})
    if isinstance(action, Replace):
        return hermes_call("edit", {"path": action.path, "old_str": action.old, "new_str": action.new})
    if isinstance(action, Submit):
        return hermes_call("submit", {})
    raise TypeError(f"no tool call for {action!r}")


def parse_hermes(reply: str) -> Action:
    """One Hermes/Qwen ``<tool_call>`` in ``reply`` as an Action; anything else an Invalid naming the fault."""
    if len(reply) > MAX_REPLY_CHARS:
        return Invalid(f"the reply is {len(reply)} characters long; keep it under {MAX_REPLY_CHARS} with one tool call.")
    opens, closes = reply.count(OPEN), reply.count(CLOSE)
    if opens == 0:
        return Invalid(f"no tool call found. {HERMES_FORMAT}")
    if opens > 1 or closes > 1:  # two calls, or one nested in another: either way not one call
        return Invalid(f"{opens} {OPEN} and {closes} {CLOSE} tags in one reply; call exactly one tool per reply.")
    start = reply.index(OPEN) + len(OPEN)
    end = reply.find(CLOSE, start)
    if end < 0:
        return Invalid(f"the {OPEN} is not closed with {CLOSE}.")
    body = reply[start:end].strip()
    try:
        call = json.loads(body, object_pairs_hook=_no_duplicates)
    except _DuplicateKey as e:
        return Invalid(f"the tool call's JSON is ambiguous: {e}.")
    except RecursionError:  # brackets nested thousands deep: json's C scanner recurses
        return Invalid("the tool call's JSON is nested too deeply.")
    except ValueError as e:
        return Invalid(f'the tool call is not valid JSON ({e}); expected {{"name": TOOL, "arguments": {{...}}}}.')
    if not isinstance(call, dict):
        return Invalid(f'the tool call is {_type_name(call)}; expected a JSON object {{"name": TOOL, "arguments": {{...}}}}.')
    keys = set(call)
    if keys != {"name", "arguments"}:
        missing, extra = sorted({"name", "arguments"} - keys), sorted(keys - {"name", "arguments"})
        faults = ([f"no {' and no '.join(missing)}"] if missing else []) + ([f"unexpected keys {', '.join(repr(k[:40]) for k in extra[:5])}"] if extra else [])
        return Invalid(f'the tool call has {"; ".join(faults)}; expected exactly {{"name": TOOL, "arguments": {{...}}}}.')
    name = call["name"]
    if not isinstance(name, str) or name not in _SCHEMAS:
        shown = repr(name[:40]) if isinstance(name, str) else _type_name(name)
        return Invalid(f"unknown tool {shown}; the tools are {', '.join(_SCHEMAS)}.")
    why = check_arguments(name, call["arguments"])
    return Invalid(f"{why}.") if why else _action(name, call["arguments"])


PARSERS: dict[str, Callable[[str], Action]] = {"hermes": parse_hermes}
FORMATS: dict[str, str] = {"hermes": HERMES_FORMAT}
