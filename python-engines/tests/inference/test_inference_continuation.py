"""/v1/chat/continuation: multi-turn token ids stay end to end. The ids held
for earlier turns plus the continuation equal what the model would see for the
whole conversation, without re-tokenizing the earlier turns."""
from fastapi.testclient import TestClient

from rollflow_engines.app import create_app
from rollflow_engines.config import load_config


def client(backend: str, tmp_path=None) -> TestClient:
    flags: list[str] = []  # torch builds tiny:default into the shared model cache
    return TestClient(create_app(load_config(None, {"role": "inference", "backend": backend}, flags)))


def test_sim_continuation_closes_the_turn_and_opens_the_next():
    with client("sim") as c:
        first = c.post("/v1/chat/continuation", json={
            "history": [{"role": "user", "content": "a"}, {"role": "assistant", "content": ""}],
            "messages": [{"role": "user", "content": "b"}]}).json()["token_ids"]
        whole = c.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "b"}], "max_tokens": 1}).json()
        assert first == [7, *whole["prompt_token_ids"]]  # end of turn, then the new turn as chat_prompt renders it


def test_torch_continuation_matches_the_template_of_the_whole_conversation(tmp_path):
    history = [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]
    new = [{"role": "user", "content": "and 3+3?"}]
    with client("torch", tmp_path) as c:
        first = c.post("/v1/chat/completions", json={"messages": history[:1], "max_tokens": 1}).json()["prompt_token_ids"]
        tail = c.post("/v1/chat/continuation", json={"history": history, "messages": new}).json()["token_ids"]
        whole = c.post("/v1/chat/completions", json={"messages": history + new, "max_tokens": 1}).json()["prompt_token_ids"]
    # the tiny tokenizer is character-level, so "4" is one id and the pieces line up exactly
    four = whole[len(first)]
    assert first + [four] + tail == whole


def test_bad_history_is_a_400_naming_the_field():
    with client("sim") as c:
        r = c.post("/v1/chat/continuation", json={"history": [{"role": "user", "content": "a"}], "messages": [{"role": "user", "content": "b"}]})
        assert r.status_code == 400 and r.json()["problems"][0]["field"] == "history"
