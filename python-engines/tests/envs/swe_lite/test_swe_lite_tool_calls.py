"""SWE-lite's native tool calls (tool_calls.py, ``actions: tool_calls``): the Hermes/Qwen parser against well-formed
and hostile calls, the env's first turn and steps with them, and the tiny model's chat template that renders the tools."""
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from rollflow_engines.envs.swe_lite.actions import MAX_REPLY_CHARS, Bash, Invalid, Replace, Submit, View
from rollflow_engines.envs.swe_lite.env import SweLiteConfig, SweLiteEnv
from rollflow_engines.envs.swe_lite.tool_calls import PARSERS, TOOLS, call_of, hermes_call, parse_hermes
from rollflow_engines.models.chat import TOOLS_ROLE


def call(name, arguments=None, **extra) -> str:
    """A call as Qwen2.5's template writes one (template below): the JSON on its own line inside the tags."""
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': {} if arguments is None else arguments, **extra})}\n</tool_call>"


# ---- the parser

@pytest.mark.parametrize("reply, action", [
    (call("bash", {"command": " ls -la "}), Bash("ls -la")),
    (call("view", {"path": "board_lib/core.py"}), View("board_lib/core.py")),
    (call("view", {"path": "a.py", "start": 3, "end": 9}), View("a.py", 3, 9)),
    (call("view", {"path": "a.py", "start": 3}), View("a.py", 3, None)),
    (call("edit", {"path": "a.py", "old_str": "x < y", "new_str": "x > y"}), Replace("a.py", "x < y", "x > y")),
    (call("edit", {"path": "a.py", "old_str": "gone\n", "new_str": ""}), Replace("a.py", "gone\n", "")),
    (call("submit"), Submit()),
    # Qwen3 thinks first; text around the call is the model's own.
    ("<think>the bug is a flipped comparison</think>\n\n" + call("submit"), Submit()),
    ('<tool_call>{"name": "bash", "arguments": {"command": "echo \\u00e9"}}</tool_call>', Bash("echo é")),
])
def test_a_well_formed_call_is_its_action(reply, action):
    assert parse_hermes(reply) == action
    assert PARSERS["hermes"] is parse_hermes


@pytest.mark.parametrize("action", [Bash("ls -R && echo 'a \"b\"'"), View("board_lib/core.py"), View("a.py", 3, 9), View("a.py", 3),
                                    Replace("a.py", "    if x < best:\n", "    if x > best:\n"), Replace("a.py", "gone", ""), Submit()])
def test_call_of_writes_the_call_that_parses_back_to_its_action(action):
    """call_of, the scripted policy's writer of calls, is the parser's inverse, so its calls are valid ones."""
    written = call_of(action)
    assert written.startswith("<tool_call>\n") and written.endswith("\n</tool_call>")
    assert parse_hermes(written) == action


@pytest.mark.parametrize("tool, arguments, named", [
    ("shell", {"command": "ls"}, "unknown tool 'shell'"),
    ("bash", {}, "bash is missing argument command"),
    ("view", {"path": "a.py", "start": "3"}, "argument start of view is a string"),
    ("submit", {"now": 1}, "submit has no argument 'now'"),
])
def test_hermes_call_refuses_a_call_that_does_not_fit_the_tools(tool, arguments, named):
    with pytest.raises(ValueError, match=named):
        hermes_call(tool, arguments)


def why(reply) -> str:
    action = parse_hermes(reply)
    assert isinstance(action, Invalid), action
    return action.why


@pytest.mark.parametrize("reply, named", [
    ("I will look at the code first.", ["no tool call", "<tool_call>", "bash, view, edit, submit"]),
    ("<bash>ls</bash>", ["no tool call"]),  # the other format is not a call
    (call("bash", {"command": "ls"}) + call("submit"), ["2 <tool_call> and 2 </tool_call> tags", "exactly one"]),
    ("<tool_call>" + call("submit") + "</tool_call>", ["2 <tool_call> and 2 </tool_call> tags"]),  # one nested in another
    (call("submit") + "</tool_call>", ["1 <tool_call> and 2 </tool_call> tags"]),
    ('<tool_call>{"name": "submit", "arguments": {}}', ["not closed", "</tool_call>"]),
    ("</tool_call>" + '<tool_call>{"name": "submit", "arguments": {}}', ["not closed"]),
    ('<tool_call>{"name": "bash", "arguments": {"command": "ls"}</tool_call>', ["not valid JSON", '"name"', '"arguments"']),
    ("<tool_call></tool_call>", ["not valid JSON"]),
    ('<tool_call>["bash", "ls"]</tool_call>', ["an array", "JSON object"]),
    ('<tool_call>{"name": "bash", "arguments": {"command": "ls"}, "id": 1}</tool_call>', ["unexpected keys 'id'"]),
    ('<tool_call>{"tool": "bash", "args": {"command": "ls"}}</tool_call>', ["no arguments and no name", "unexpected keys 'args', 'tool'"]),
    ('<tool_call>{"name": "view", "name": "bash", "arguments": {"command": "ls"}}</tool_call>', ["ambiguous", "'name' appears twice"]),
    ('<tool_call>{"name": "bash", "arguments": {"command": "ls", "command": "rm -rf ."}}</tool_call>', ["'command' appears twice"]),
    (call("python", {"code": "print(1)"}), ["unknown tool 'python'", "bash, view, edit, submit"]),
    (call(["bash"], {"command": "ls"}), ["unknown tool an array"]),
    (call("bash", {}), ["bash is missing argument command", "command (string)"]),
    (call("edit", {"path": "a.py", "old_str": "x"}), ["missing argument new_str", "path (string), old_str (string), new_str (string)"]),
    (call("bash", {"command": "ls", "timeout": 5}), ["bash has no argument 'timeout'"]),
    (call("submit", {"reason": "done"}), ["submit has no argument 'reason'", "no arguments"]),
    (call("bash", {"command": ["ls", "-la"]}), ["command of bash is an array", "expected a string"]),
    (call("view", {"path": "a.py", "start": "3", "end": 9}), ["start of view is a string", "expected an integer"]),
    (call("view", {"path": "a.py", "start": True, "end": 9}), ["start of view is a boolean"]),  # true is no line number
    (call("view", {"path": "a.py", "start": 2.0}), ["start of view is a number"]),
    ('<tool_call>{"name": "bash", "arguments": "{\\"command\\": \\"ls\\"}"}</tool_call>', ["arguments of bash are a string", "JSON object"]),
    (call("bash", {"command": "   "}), ["command is empty"]),
    (call("bash", {"command": "cat a\x00; id"}), ["NUL"]),
    ('<tool_call>{"name": "edit", "arguments": {"path": "a.py", "old_str": "\\ud800", "new_str": "x"}}</tool_call>', ["old_str", "lone surrogates"]),
    (call("view", {"path": " "}), ["names no file"]),
    (call("view", {"path": "a.py", "start": 0, "end": 3}), ["start must be at least 1"]),
    (call("view", {"path": "a.py", "start": 5, "end": 2}), ["at most end"]),
    (call("view", {"path": "a.py", "end": 0}), ["at most end"]),
    (call("edit", {"path": "a.py", "old_str": "", "new_str": "x"}), ["old_str is empty"]),
])
def test_a_malformed_call_is_an_invalid_action_naming_the_fault(reply, named):
    text = why(reply)
    assert all(n in text for n in named), text


def test_hostile_sizes_are_invalid_actions_in_bounded_time():
    assert "characters long" in why(call("bash", {"command": "x" * MAX_REPLY_CHARS}))
    # json's C scanner recurses per bracket: thousands deep is a RecursionError, caught, never raised.
    assert "nested too deeply" in why("<tool_call>" + "[" * 19_000 + "</tool_call>")
    # Thousands of opening tags: counted once each, no rescans (linear, unlike a lazy regex per tag).
    assert "1500 <tool_call> and 0 </tool_call> tags" in why("<tool_call>" * 1500)
    assert "unexpected keys" in why('<tool_call>{"name": "submit", "arguments": {}, ' + ", ".join(f'"k{i}": 0' for i in range(900)) + "}</tool_call>")
    # The model's text is quoted cut short: an observation is no echo chamber for a 15,000-character name.
    for huge in (call("t" * 15_000), call("bash", {"c" * 15_000: 1}), '<tool_call>{"' + "k" * 9_000 + '": 1, "' + "k" * 9_000 + '": 2}</tool_call>'):
        assert len(why(huge)) < 400 and "not closed" not in why(huge)


JSONISH = st.text(alphabet='{}[]":,\\ \nu0d8abcnmetrgsxlpuv<>/_-1', max_size=120)


@settings(max_examples=300, deadline=None, database=None)
@given(st.one_of(st.text(max_size=300), st.builds(lambda a, b, c: f"{a}<tool_call>{b}</tool_call>{c}", st.text(max_size=40), JSONISH, st.text(max_size=40)),
                 st.builds(lambda b: f'<tool_call>{{"name": "edit", "arguments": {b}}}</tool_call>', JSONISH)))
def test_any_text_parses_to_an_action_and_never_raises(reply):
    assert isinstance(parse_hermes(reply), (Bash, View, Replace, Submit, Invalid))


def test_the_schemas_are_openai_functions_with_every_argument_typed():
    assert [t["function"]["name"] for t in TOOLS] == ["bash", "view", "edit", "submit"]
    for tool in TOOLS:
        assert tool["type"] == "function" and tool["function"]["description"].isascii()  # the tiny tokenizer is ASCII
        params = tool["function"]["parameters"]
        assert params["type"] == "object" and params["additionalProperties"] is False
        assert set(params["required"]) <= set(params["properties"]) and all(p["type"] in ("string", "integer") for p in params["properties"].values())


# ---- the env

def start(env, **config):
    return env.reset(0, SweLiteConfig(task="t1-002", actions="tool_calls", **config))


def test_xml_stays_the_default_and_sends_no_first_messages(env):
    obs = env.reset(0, SweLiteConfig(task="t1-002"))
    assert env.config.actions == "xml" and env.first_messages(obs) is None and "<submit/>" in obs and "tool_call" not in obs
    assert env.step(call("submit")).info["invalid_action"]  # a tool call is no XML action


def test_an_unknown_protocol_is_refused_naming_the_key_the_value_and_the_choices():
    with pytest.raises(ValidationError) as e:
        SweLiteConfig(actions="json")
    err = e.value.errors()[0]
    assert err["loc"] == ("actions",) and err["input"] == "json" and "'xml', 'tool_calls' or 'bash'" in err["msg"]


def test_the_first_turn_hands_the_tools_to_the_template_and_asks_for_calls(env):
    obs = start(env)
    assert "<tool_call>" in obs and "<submit/>" not in obs and env.task.issue in obs
    tools, user = env.first_messages(obs)
    assert tools == {"role": TOOLS_ROLE, "content": json.dumps(TOOLS)} and user == {"role": "user", "content": obs}
    brief = SweLiteEnv()
    try:
        assert brief.reset(0, SweLiteConfig(task="t1-002", actions="tool_calls", brief=True)).endswith("Call edit, then submit.")
    finally:
        brief.close()


def test_tool_calls_fix_the_repository_and_submit_scores_1(env):
    start(env)
    assert "core.py" in env.step(call("bash", {"command": "ls board_lib"})).observation
    viewed = env.step(call("view", {"path": "board_lib/core.py", "start": 1, "end": 3})).observation
    assert viewed.startswith("   1  ") and len(viewed.splitlines()) == 3
    (path, old, new), = env.task.fix
    assert env.step(call("edit", {"path": path, "old_str": old, "new_str": new})).observation == f"Replaced 1 occurrence in {path}."
    end = env.step(call("submit"))
    assert (end.reward, end.done, end.info["success"], end.info["invalid_actions"], end.info["turn"]) == (1.0, True, True, 0, 4)


def test_a_malformed_call_is_an_invalid_step_whose_observation_says_what_to_send(env):
    start(env)
    r = env.step(call("edit", {"path": "board_lib/core.py", "old": "<", "new": ">"}))
    assert r.info["invalid_action"] and r.info["invalid_actions"] == 1 and not r.done and r.reward == 0.0
    assert r.observation.startswith("Invalid action: edit is missing argument old_str, new_str")
    assert '<tool_call>{"name": TOOL, "arguments": {...}}</tool_call>' in r.observation  # the format follows, as for XML


@pytest.mark.parametrize("arguments, expected", [
    ({"path": "../../etc/passwd"}, "outside"),
    ({"path": "/etc/passwd"}, "outside"),
    ({"path": "board_lib/\x00core.py"}, "NUL"),
    ({"path": "a/" * 700}, "characters long"),
    ({"path": "board_lib/missing.py"}, "Error:"),
])
def test_hostile_paths_get_the_checks_xml_actions_get(env, arguments, expected):
    start(env)
    assert expected in env.step(call("view", arguments)).observation
    edit = env.step(call("edit", {**arguments, "old_str": "root", "new_str": "x"}))
    assert expected in edit.observation and not edit.info["invalid_action"]  # a well-formed call: the env's check refused it


def test_an_edit_that_matches_twice_is_refused_as_xml_replace_is(env):
    start(env)
    assert "occurs 0 times" in env.step(call("edit", {"path": "board_lib/core.py", "old_str": "no such text", "new_str": "x"})).observation
