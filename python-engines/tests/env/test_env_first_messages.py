"""/reset carries an env's first-turn messages (BaseEnv.first_messages) only when it has some: swe_lite's tools
with actions: tool_calls; every other reset answers as before, without the key."""
import json
from pathlib import Path

from fastapi.testclient import TestClient

from rollflow_engines.app import create_app
from rollflow_engines.config import ServeConfig
from rollflow_engines.envs.swe_lite.tool_calls import TOOLS


def test_reset_sends_the_tools_message_only_for_tool_calls(tmp_path):
    options = {"sandbox_root": str(tmp_path / "sandboxes"), "snapshot_dir": str(tmp_path / "snapshots")}
    with TestClient(create_app(ServeConfig(role="env", options=options))) as c:
        xml = c.post("/reset", json={"env": "swe_lite", "seed": 0, "config": {"task": "t1-002"}}).json()
        assert "messages" not in xml
        tools = c.post("/reset", json={"env": "swe_lite", "seed": 0, "config": {"task": "t1-002", "actions": "tool_calls"}}).json()
        assert tools["messages"] == [{"role": "tools", "content": json.dumps(TOOLS)}, {"role": "user", "content": tools["observation"]}]
        step = c.post("/step", json={"session": tools["session"], "index": 0,
                                     "action": '<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>'}).json()
        assert step["observation"].startswith("[exit 0]") and "board_lib" in step["observation"]
        for r in (xml, tools):
            assert c.post("/close", json={"session": r["session"]}).status_code == 200
        bad = c.post("/reset", json={"env": "swe_lite", "seed": 0, "config": {"actions": "json"}})
        assert bad.status_code == 400
        problem = bad.json()["problems"][0]
        assert problem["field"] == "config.actions" and problem["given"] == "json" and "'xml', 'tool_calls' or 'bash'" in problem["message"], problem


def test_the_tools_fixture_is_what_the_server_answers(tmp_path):
    expected = json.loads((Path(__file__).resolve().parents[3] / "contracts" / "env" / "ResetResponse.tools.json").read_text())
    options = {"sandbox_root": str(tmp_path / "sandboxes"), "snapshot_dir": str(tmp_path / "snapshots")}
    with TestClient(create_app(ServeConfig(role="env", options=options))) as c:
        reset = c.post("/reset", json={"env": "swe_lite", "seed": 0, "config": {"task": "t1-002", "actions": "tool_calls", "brief": True}}).json()
        assert c.post("/close", json={"session": reset["session"]}).status_code == 200
    assert {**reset, "session": expected["session"]} == expected
