"""What a policy may write, sent to the envs over HTTP as an action: text the env cannot read is an
invalid action with a short observation that says what to write, never an error or a crash."""
import random
import threading

import pytest
from fastapi.testclient import TestClient

from rollflow_engines.app import create_app
from rollflow_engines.config import ServeConfig
from rollflow_engines.envs.base import extract_answer

FIXED = ["SFFF", "FHFH", "FFFH", "HFFG"]


def garbage(seed: int, chars: int) -> str:
    """Random text from every plane a decoder can emit: ASCII, controls, U+FFFD, combining marks, RTL, CJK, emoji."""
    rng = random.Random(seed)
    pools = ["abcXYZ019 \n\t<>/", "\x00\x01\x1b\x7f", "\ufffd", "\u0301\u0308", "\u202e\u200f", "中文字", "😀🧊", "İß"]
    return "".join(rng.choice(rng.choice(pools)) for _ in range(chars))


UNREADABLE = {
    "empty": "",
    "whitespace": " \n\t ",
    "replacement characters (bytes that were not UTF-8)": "\ufffd\ufffd",
    "controls": "\x00\x1b[31m\x7f",
    "an unclosed tag": "<answer>Down",
    "an empty tag": "<answer></answer>",
    "tags nested deep": "<answer>" * 500 + "x" + "</answer>" * 500,
    "an action inside garbage": "Down" + "\ufffd" + "Right",
    "right-to-left override around an action": "\u202eDown\u202c",
    "a digit with a combining mark": "4\u0301",
    "max-length garbage (4096 tokens' worth)": garbage(0, 16_384),
}


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(ServeConfig(role="env")), raise_server_exceptions=False) as c:
        yield c


def new_session(client, env: str) -> str:
    config = {"desc": FIXED} if env == "frozen_lake" else {"format_penalty": 0.5}
    r = client.post("/reset", json={"env": env, "seed": 1, "config": config})
    assert r.status_code == 200, r.text
    return r.json()["session"]


@pytest.mark.parametrize("env", ["frozen_lake", "arithmetic"])
@pytest.mark.parametrize("what", list(UNREADABLE))
def test_unreadable_output_is_an_invalid_action_with_a_short_helpful_observation(client, env, what):
    r = client.post("/step", json={"session": new_session(client, env), "index": 0, "action": UNREADABLE[what]})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["info"]["invalid_action"] is True, (what, body)
    if env == "frozen_lake":
        assert (body["reward"], body["done"]) == (0.0, False)
        assert body["observation"].startswith("Invalid action") and "reply with exactly one of Left, Down, Right, Up" in body["observation"]
    else:
        assert (body["reward"], body["done"]) == (-0.5, True)
        assert body["observation"].startswith("Invalid answer") and "expected a single integer" in body["observation"]
    # The action is quoted, not echoed: the observation goes back into the model's next prompt.
    assert len(body["observation"].split("\n")[0]) < 300


@pytest.mark.parametrize("env", ["frozen_lake", "arithmetic"])
def test_an_action_at_the_size_limit_of_unclosed_tags_is_read_in_linear_time(client, env):
    action = "<answer>" * 125_000  # the longest action the step contract takes: 1,000,000 characters
    result: dict = {}

    def send() -> None:
        result["response"] = client.post("/step", json={"session": new_session(client, env), "index": 0, "action": action})

    worker = threading.Thread(target=send, daemon=True)
    worker.start()
    # Only a guard against a hang: the answer comes in well under a second (a rescan per tag took over an hour).
    worker.join(timeout=120)
    assert not worker.is_alive(), "a step over unclosed <answer> tags never returned"
    r = result["response"]
    assert r.status_code == 200 and r.json()["info"]["invalid_action"] is True, r.text[:300]


def test_extract_answer_pairs_tags_like_a_non_greedy_match():
    assert extract_answer("<answer>1</answer> then <ANSWER> 2 </Answer>") == "2"
    assert extract_answer("<answer>a<answer>b</answer>") == "a<answer>b"
    assert extract_answer("<answer>a</answer></answer>") == "a"
    assert extract_answer("<answer>a</answer><answer>b") == "a"
    assert extract_answer(" no tags ") == "no tags"
