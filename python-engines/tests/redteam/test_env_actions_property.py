"""Property: whatever a model replies, and whatever state it left its workspace in, an env step answers 200.

Hypothesis generates replies for every Python env (arithmetic, frozen_lake, swe_lite): free text with
control characters and NULs, each action format with hostile arguments, and for swe_lite a workspace
first shaped by commands a policy could send (links, loops, FIFOs, huge and oddly named files, the old
grading directory). Every answer must be a 200 with a text observation and a reward in [0, 1], the
episode closes cleanly, and nothing of its sandbox is left.
"""
import json
import math

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rollflow_engines.app import create_app
from rollflow_engines.config import ServeConfig

# Any text a detokenizer can produce: every code point but surrogates (edge.py refuses those with a 400).
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200)
SETTINGS = settings(max_examples=25, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    root = tmp_path_factory.mktemp("property")
    options = {"sandbox_root": str(root / "sandboxes"), "snapshot_dir": str(root / "snapshots")}
    with TestClient(create_app(ServeConfig(role="env", options=options)), raise_server_exceptions=False) as c:
        c.sandbox_root = root / "sandboxes"
        yield c


def play(client, env: str, config: dict, actions: list[str]) -> None:
    r = client.post("/reset", json={"env": env, "seed": 3, "config": config})
    assert r.status_code == 200, r.text
    session = r.json()["session"]
    try:
        for index, action in enumerate(actions):
            r = client.post("/step", content=json.dumps({"session": session, "index": index, "action": action}), headers={"content-type": "application/json"})
            assert r.status_code == 200, f"{action[:300]!r} -> {r.status_code} {r.text[:500]}"
            body = r.json()
            assert isinstance(body["observation"], str) and math.isfinite(body["reward"]) and 0.0 <= body["reward"] <= 1.0
            if body["done"]:
                break
    finally:
        assert client.post("/close", json={"session": session}).status_code == 200
    root = client.sandbox_root
    assert not root.exists() or all(not any(owner.iterdir()) for owner in root.iterdir())


# ---- arithmetic and frozen_lake: text in, one step or a few

@SETTINGS
@given(st.lists(st.one_of(TEXT, st.from_regex(r"\A-?\d{0,30}\Z"), st.sampled_from(["\x00", "9" * 5000, "1e999", "NaN", "-0"])), min_size=1, max_size=3))
def test_arithmetic_answers_every_reply(client, replies):
    play(client, "arithmetic", {}, replies)


MOVES = st.sampled_from(["Left", "Right", "Up", "Down", "left", "UP", "<Down>", "Right Right", "\x00Up", ""])


@SETTINGS
@given(st.lists(st.one_of(TEXT, MOVES, st.builds(lambda a, b: a + b, TEXT, MOVES)), min_size=1, max_size=6))
def test_frozen_lake_answers_every_reply(client, replies):
    play(client, "frozen_lake", {}, replies)


# ---- swe_lite: a workspace shaped by the model, then any action on any path

SHAPES = [
    "ln -s loop loop", "ln -s /etc/passwd pw", "ln -s / rootlink", "mkfifo pipe", "mkdir -p d/e && chmod 000 d",
    "head -c 2000000 /dev/zero > big", "touch .grading", "mkdir -p .grading && ln -s /etc .grading/x",
    "touch \"$(printf 'a%.0s' $(seq 250))\"", "printf 'x\\377\\376y' > \"$(printf 'bad\\377')\"",
    "rm -f board_lib/core.py && mkfifo board_lib/core.py", "rm -rf board_lib && ln -s /tmp board_lib",
    "mkdir many && cd many && seq 300 | xargs touch", "printf 'import os\\nos._exit(0)\\n' > board_lib/__init__.py",
    "echo 'def test_x(): pass' > test_fail_to_pass.py", "printf '[pytest]\\naddopts=-p no:junitxml\\n' > pytest.ini",
]
PATHS = st.one_of(st.sampled_from(["loop", "pw", "rootlink/etc/passwd", "pipe", "d/e", "big", ".grading", ".grading/x/passwd",
                                   "a" * 250, "a" * 300, "bad\xff", "board_lib/core.py", "board_lib", "many", "/etc/passwd",
                                   "../x", "./board_lib/../board_lib/core.py", "x\x00y", ""]), TEXT)


def _action(kind: str, path: str, old: str, new: str, start: int, end: int, command: str) -> str:
    return {
        "view": f"<view>{path}</view>",
        "range": f'<view start="{start}" end="{end}">{path}</view>',
        "replace": f'<replace path="{path}"><old>{old}</old><new>{new}</new></replace>',
        "bash": f"<bash>{command}</bash>",
        "submit": "<submit/>",
    }[kind]


ACTIONS = st.one_of(
    TEXT,
    st.builds(_action, st.sampled_from(["view", "range", "replace", "bash", "submit"]), PATHS, st.one_of(TEXT, st.just("if x < best:")),
              TEXT, st.integers(0, 10**6), st.integers(0, 10**6), st.one_of(st.sampled_from(SHAPES + ["ls -la", "cat pipe", "cat big | head -c 10"]),
                                                                               st.text(alphabet="abcdefgh ;|&<>'\"\\$()\x00\n", max_size=40))),
)


@settings(max_examples=int(__import__("os").environ.get("ROLLFLOW_PROPERTY_EXAMPLES", 60)), deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes=st.lists(st.sampled_from(SHAPES), max_size=3), actions=st.lists(ACTIONS, min_size=1, max_size=3))
def test_swe_lite_answers_every_action_in_every_workspace_state(client, shapes, actions):
    play(client, "swe_lite", {"task": "t1-002", "command_timeout_s": 5, "grading_timeout_s": 60},
         [f"<bash>{shape}</bash>" for shape in shapes] + actions)


# ---- swe_lite with native tool calls: the same hostile arguments inside <tool_call> JSON, and broken JSON

def _call(kind: str, path: str, old: str, new: str, start: int, end: int, command: str) -> str:
    name, arguments = {
        "view": ("view", {"path": path}),
        "range": ("view", {"path": path, "start": start, "end": end}),
        "replace": ("edit", {"path": path, "old_str": old, "new_str": new}),
        "bash": ("bash", {"command": command}),
        "submit": ("submit", {}),
    }[kind]
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


RAW_CALLS = st.sampled_from([
    '<tool_call>{"name": "edit", "arguments": {"path": "\\ud800", "old_str": "\\udfff", "new_str": "x"}}</tool_call>',
    '<tool_call>{"name": "view", "arguments": {"path": "board_lib/core.py", "start": 1e999}}</tool_call>',
    '<tool_call>{"name": "bash", "arguments": {"command": "ls"}, "name": "submit"}</tool_call>',
    "<tool_call>" + "[" * 5000 + "</tool_call>", "<tool_call>" * 300, "<tool_call>null</tool_call>",
    '<tool_call>{"name": "view", "arguments": {"path": "../../../etc/shadow"}}</tool_call>',
])
TOOL_CALL_ACTIONS = st.one_of(
    TEXT, RAW_CALLS,
    st.builds(_call, st.sampled_from(["view", "range", "replace", "bash", "submit"]), PATHS, st.one_of(TEXT, st.just("if x < best:")),
              TEXT, st.integers(-3, 10**6), st.integers(-3, 10**6), st.one_of(st.sampled_from(SHAPES + ["ls -la", "cat pipe"]), TEXT)),
    # a call cut short anywhere, as a generation stopped at max_tokens leaves it
    st.builds(lambda c, cut: c[:cut], st.builds(_call, st.just("replace"), PATHS, TEXT, TEXT, st.just(1), st.just(2), TEXT), st.integers(0, 200)),
)


@settings(max_examples=int(__import__("os").environ.get("ROLLFLOW_PROPERTY_EXAMPLES", 60)), deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes=st.lists(st.sampled_from(SHAPES), max_size=2), actions=st.lists(TOOL_CALL_ACTIONS, min_size=1, max_size=3))
def test_swe_lite_answers_every_tool_call_in_every_workspace_state(client, shapes, actions):
    play(client, "swe_lite", {"task": "t1-002", "actions": "tool_calls", "command_timeout_s": 5, "grading_timeout_s": 60},
         [_call("bash", "", "", "", 1, 1, shape) for shape in shapes] + actions)


# ---- swe_lite with the bash scaffold: hostile commands and broken fences, the sentinel anywhere

SENTINEL = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
FENCES = st.sampled_from(["```bash\n", "```", "````bash\n", "```python\n", "\n```\n", "```bash", f"echo {SENTINEL}", "\x00", "\n"])
BASH_ACTIONS = st.one_of(
    TEXT,
    st.builds(lambda c: f"```bash\n{c}\n```", st.one_of(st.sampled_from(SHAPES + ["ls -la", "cat pipe", f"echo {SENTINEL}", f"cat big; echo {SENTINEL}",
                                                                         f"echo {SENTINEL} && rm -rf board_lib"]), TEXT)),
    st.lists(st.one_of(FENCES, TEXT), max_size=6).map("".join),
)


@settings(max_examples=int(__import__("os").environ.get("ROLLFLOW_PROPERTY_EXAMPLES", 60)), deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes=st.lists(st.sampled_from(SHAPES), max_size=2), actions=st.lists(BASH_ACTIONS, min_size=1, max_size=3))
def test_swe_lite_answers_every_bash_block_in_every_workspace_state(client, shapes, actions):
    play(client, "swe_lite", {"task": "t1-002", "actions": "bash", "command_timeout_s": 5, "grading_timeout_s": 60},
         [f"```bash\n{shape}\n```" for shape in shapes] + actions)
