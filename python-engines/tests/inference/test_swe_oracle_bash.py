"""The scripted policy in the bash scaffold (swe_oracle_bash.py, ``actions: bash``): its XML plans translated into one
```bash block each, over HTTP through the env server and the sim inference server as the bridge drives them: solvers
score 1 with no invalid action, flailers 0 with their unreadable replies counted; and the translation on its own."""
import pytest
from fastapi.testclient import TestClient

from rollflow_engines.app import create_app
from rollflow_engines.config import ServeConfig
from rollflow_engines.envs.swe_lite.actions import Bash, Invalid, Replace, Submit, View
from rollflow_engines.envs.swe_lite.bash_only import SENTINEL, parse_bash
from rollflow_engines.envs.swe_lite.env import BRIEF_BASH_FORMAT
from rollflow_engines.roles.inference.swe_oracle_bash import asks_for_bash, command_of, translate


@pytest.mark.parametrize("xml, command", [
    ("I will read the code, then fix it.\n<view>board_lib/core.py</view>", "cat -n board_lib/core.py"),
    ('Next.\n<view start="2" end="5">a b.py</view>', "sed -n '2,5p' 'a b.py' | cat -n"),
    ("Trying.\n<bash>ls -la</bash>", "ls -la"),
    ("Done, I think.\n<submit/>", f"echo {SENTINEL}"),
])
def test_an_xml_reply_becomes_the_same_text_and_one_bash_block(xml, command):
    translated = translate(xml)
    assert translated.startswith(xml.split("<", 1)[0]) and parse_bash(translated) == Bash(command)


def test_an_unreadable_reply_stays_unreadable():
    for reply in ["Let me poke around. hmm, maybe <bash>ls", "no action"]:
        assert translate(reply) == reply and isinstance(parse_bash(reply), Invalid)


def test_the_bash_scaffold_is_recognised_in_full_and_in_brief():
    assert asks_for_bash(f"Task t1-000. Issue: x\n{BRIEF_BASH_FORMAT}")
    assert not asks_for_bash("Task t1-000. Issue: x\nReply <replace ...>, then <submit/>.")
    assert "```" not in command_of(Replace("a.py", "x", "y")) and command_of(Submit()) == f"echo {SENTINEL}"
    assert command_of(View("a.py")) == "cat -n a.py"


def serve_episode(env_client, infer_client, task: str, seed: int, max_turns: int = 20) -> dict:
    """One actions: bash episode as the bridge plays it (observations as user messages: no tools), returning the last step and the replies."""
    reset = env_client.post("/reset", json={"env": "swe_lite", "seed": 0, "config": {"task": task, "max_turns": max_turns, "actions": "bash"}}).json()
    assert "messages" not in reset
    messages = [{"role": "user", "content": reset["observation"]}]
    r = infer_client.post("/v1/chat/completions", json={"messages": messages, "max_tokens": 4096, "seed": seed}).json()
    held, choice = r["prompt_token_ids"], r["choices"][0]
    text, replies = choice["message"]["content"], []
    try:
        for index in range(max_turns):
            replies.append(text)
            step = env_client.post("/step", json={"session": reset["session"], "index": index, "action": text}).json()
            if step["done"]:
                return {**step, "replies": replies}
            history = [*messages, {"role": "assistant", "content": text}]
            new = [{"role": "user", "content": step["observation"]}]
            held = held + choice["token_ids"] + infer_client.post("/v1/chat/continuation", json={"history": history, "messages": new}).json()["token_ids"]
            messages = history + new
            choice = infer_client.post("/v1/completions", json={"prompt": held, "max_tokens": 4096, "seed": seed + index + 1}).json()["choices"][0]
            text = choice["text"]
        raise AssertionError("the episode never ended")
    finally:
        env_client.post("/close", json={"session": reset["session"]})


def test_served_bash_episodes_score_solvers_1_and_flailers_0(tmp_path):
    env_options = {"sandbox_root": str(tmp_path / "sandboxes"), "snapshot_dir": str(tmp_path / "snapshots")}
    outcomes = {}
    with TestClient(create_app(ServeConfig(role="env", options=env_options))) as env_client:
        for solve_prob in (1.0, 0.0):
            policy = {"kind": "swe_oracle", "solve_prob": solve_prob, "invalid_prob": 0.5, "flail_turns": 6}
            with TestClient(create_app(ServeConfig(role="inference", backend="sim", options={"sim": {"policy": policy}}))) as infer_client:
                outcomes[solve_prob] = [serve_episode(env_client, infer_client, task, seed) for task, seed in (("t1-001", 11), ("t2-004", 12), ("t3-002", 13))]
    for solver in outcomes[1.0]:
        assert solver["reward"] == 1.0 and solver["info"]["invalid_actions"] == 0 and solver["info"]["submitted"], solver
        assert all(isinstance(parse_bash(r), Bash) for r in solver["replies"]) and any("python3 - <<" in r for r in solver["replies"])
    unreadable = 0
    for flailer in outcomes[0.0]:
        assert flailer["reward"] == 0.0 and flailer["info"]["submitted"], flailer
        invalid = sum(isinstance(parse_bash(r), Invalid) for r in flailer["replies"])
        assert flailer["info"]["invalid_actions"] == invalid, flailer
        unreadable += invalid
    assert unreadable > 0
