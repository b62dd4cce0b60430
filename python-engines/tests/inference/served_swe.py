"""swe_lite episodes played over HTTP, the env server and the sim inference server, as the bridge drives them."""
from fastapi.testclient import TestClient

from rollflow_engines.app import create_app
from rollflow_engines.config import ServeConfig

EPISODES = (("t1-001", 11), ("t2-004", 12), ("t3-002", 13))  # (task, seed): one task of each tier


def served_solvers_and_flailers(tmp_path, actions: str) -> dict[float, list[dict]]:
    """The swe_oracle's EPISODES at solve_prob 1 and 0 (flailers with invalid_prob 0.5): {solve_prob: [serve_episode's answers]}."""
    env_options = {"sandbox_root": str(tmp_path / "sandboxes"), "snapshot_dir": str(tmp_path / "snapshots")}
    outcomes = {}
    with TestClient(create_app(ServeConfig(role="env", options=env_options))) as env_client:
        for solve_prob in (1.0, 0.0):
            policy = {"kind": "swe_oracle", "solve_prob": solve_prob, "invalid_prob": 0.5, "flail_turns": 6}
            with TestClient(create_app(ServeConfig(role="inference", backend="sim", options={"sim": {"policy": policy}}))) as infer_client:
                outcomes[solve_prob] = [serve_episode(env_client, infer_client, task, seed, actions) for task, seed in EPISODES]
    return outcomes


def serve_episode(env_client, infer_client, task: str, seed: int, actions: str, max_turns: int = 20) -> dict:
    """One episode with ``actions`` as the bridge plays it: the reset's first-turn messages (the tools first, with
    tool_calls) or its observation through /v1/chat/completions, then per turn /v1/chat/continuation's ids appended to
    the ids held so far and /v1/completions over them (the token ids kept end to end); each observation goes back as
    the rollout sends it (rollout.ts observationRole: a tool message in a conversation with tools, else a user
    message). Returns the last step's answer and the replies."""
    reset = env_client.post("/reset", json={"env": "swe_lite", "seed": 0, "config": {"task": task, "max_turns": max_turns, "actions": actions}}).json()
    messages = reset.get("messages") or [{"role": "user", "content": reset["observation"]}]
    role = "tool" if messages[0]["role"] == "tools" else "user"
    r = infer_client.post("/v1/chat/completions", json={"messages": messages, "max_tokens": 4096, "seed": seed}).json()
    held, choice = r["prompt_token_ids"], r["choices"][0]
    text, replies = choice["message"]["content"], []
    try:
        for index in range(max_turns):
            replies.append(text)
            step = env_client.post("/step", json={"session": reset["session"], "index": index, "action": text}).json()
            if step["done"]:
                return {**step, "replies": replies, "first_messages": reset.get("messages")}
            history = [*messages, {"role": "assistant", "content": text}]
            new = [{"role": role, "content": step["observation"]}]
            held = held + choice["token_ids"] + infer_client.post("/v1/chat/continuation", json={"history": history, "messages": new}).json()["token_ids"]
            messages = history + new
            choice = infer_client.post("/v1/completions", json={"prompt": held, "max_tokens": 4096, "seed": seed + index + 1}).json()["choices"][0]
            text = choice["text"]
        raise AssertionError("the episode never ended")
    finally:
        env_client.post("/close", json={"session": reset["session"]})
