"""The env role over HTTP: /reset, /step, /close, /reward, /metrics, and 4xx (never 500) for bad input."""
from contextlib import contextmanager

import pytest
from fastapi.testclient import TestClient

from rollflow_engines.app import create_app
from rollflow_engines.config import ConfigError, ServeConfig, load_config

FIXED = ["SFFF", "FHFH", "FFFH", "HFFG"]
FIXED_PLAN = ["Right", "Right", "Down", "Down", "Down", "Right"]  # S(0,0) -> G(3,3) around the holes


@contextmanager
def env_server(**options):
    # `with TestClient` runs the app's lifespan, so verifier workers are killed on exit.
    with TestClient(create_app(ServeConfig(role="env", options=options)), raise_server_exceptions=False) as client:
        yield client


@pytest.fixture(scope="module")
def client():
    with env_server() as c:
        yield c


def problem_fields(r) -> list[str]:
    return [p["field"] for p in r.json()["problems"]]


def reset(client, env="frozen_lake", seed=0, **config):
    r = client.post("/reset", json={"env": env, "seed": seed, "config": config})
    assert r.status_code == 200, r.text
    return r.json()


_applied: dict[str, int] = {}  # session -> the index of its next step


def step(client, session, action):
    index = _applied.get(session, 0)
    r = client.post("/step", json={"session": session, "index": index, "action": action})
    assert r.status_code == 200, r.text
    _applied[session] = index + 1
    return r.json()


# ---- /reset, /step, /close

def test_reset_returns_a_session_and_the_first_observation(client):
    body = reset(client, seed=3)
    assert set(body) == {"session", "observation", "info", "on_env_loss", "step_timeout_s"}
    assert body["on_env_loss"] == "replay"  # frozen_lake's declaration
    assert body["observation"].splitlines()[1] == "P F F F"
    assert body["info"]["map"] == ["SFFF", "FFFH", "FHFF", "FFFG"]
    assert body["info"]["turn"] == 0 and body["info"]["legal_actions"] == ["Left", "Down", "Right", "Up"]
    assert reset(client, seed=3)["session"] != body["session"]


def test_scripted_episode_to_the_goal_then_409_then_close(client):
    session = reset(client, desc=FIXED)["session"]
    for action in FIXED_PLAN[:-1]:
        body = step(client, session, action)
        assert (body["reward"], body["done"], body["info"]["invalid_action"]) == (0.0, False, False)
    body = step(client, session, "<answer>Right</answer>")
    assert (body["reward"], body["done"], body["info"]["success"]) == (1.0, True, True)
    r = client.post("/step", json={"session": session, "index": 6, "action": "Left"})
    assert r.status_code == 409 and problem_fields(r) == ["session"]
    assert client.post("/close", json={"session": session}).json() == {"closed": True}
    assert client.post("/close", json={"session": session}).json() == {"closed": True}  # idempotent
    r = client.post("/step", json={"session": session, "index": 6, "action": "Left"})
    assert r.status_code == 404 and problem_fields(r) == ["session"]
    assert "closed" in r.json()["error"]


@pytest.mark.parametrize("action", ["jump", "", "<answer>?</answer>"])
def test_invalid_action_is_an_observation_not_an_error(client, action):
    session = reset(client, desc=FIXED, format_penalty=0.25)["session"]
    body = step(client, session, action)
    assert body["info"]["invalid_action"] is True
    assert (body["reward"], body["done"]) == (-0.25, False)
    assert body["observation"].startswith("Invalid action")
    assert step(client, session, "Right")["info"]["position"] == [0, 1]


def test_max_turns_ends_the_episode_over_http(client):
    session = reset(client, desc=FIXED, max_turns=2)["session"]
    assert step(client, session, "Up")["done"] is False
    body = step(client, session, "jump")
    assert body["done"] is True and body["info"]["truncated"] is True


def test_arithmetic_right_wrong_and_unparsable(client):
    for action, reward, invalid in [("{answer}", 1.0, False), ("{wrong}", 0.0, False), ("no idea", 0.0, True)]:
        body = reset(client, env="arithmetic", seed=9)
        answer = body["info"]["question"]
        a, op, b = answer.split()
        value = int(a) + int(b) if op == "+" else int(a) - int(b) if op == "-" else int(a) * int(b)
        result = step(client, body["session"], action.format(answer=value, wrong=value + 1))
        assert (result["reward"], result["done"], result["info"]["invalid_action"]) == (reward, True, invalid)


def test_same_seed_same_episode_over_http(client):
    a = reset(client, env="frozen_lake", seed=123, map_size=6)
    b = reset(client, env="frozen_lake", seed=123, map_size=6)
    assert (a["observation"], a["info"]) == (b["observation"], b["info"])


# ---- /reward

@pytest.mark.parametrize("response, reference, reward", [
    ("\\boxed{1/2}", "0.5", 1.0),
    ("so it is \\boxed{\\frac{1}{2}}", "1/2", 1.0),
    ("\\boxed{3}", "4", 0.0),
    ("garbage }{ \\frac{", "4", 0.0),
])
def test_reward_math_domain(client, response, reference, reward):
    r = client.post("/reward", json={"domain": "math", "prompt": "p", "response": response, "reference": reference})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["reward"] == reward
    assert body["info"]["verifier"] == "math_verify" and body["info"]["timeout"] is False


def test_reward_exact_domain_and_explicit_verifier(client):
    r = client.post("/reward", json={"domain": "exact", "response": "  yes\n", "reference": "yes"})
    assert r.json()["reward"] == 1.0 and r.json()["info"]["verifier"] == "exact_match"
    r = client.post("/reward", json={"domain": "qa", "response": "YES", "reference": "yes",
                                     "verifier": "exact_match", "config": {"ignore_case": True}})
    assert r.json()["reward"] == 1.0 and r.json()["info"]["domain"] == "qa"


def test_domains_option_maps_more_domains():
    with env_server(domains={"code": "exact_match"}) as c:
        assert c.post("/reward", json={"domain": "code", "response": "x", "reference": "x"}).json()["reward"] == 1.0
        assert c.post("/reward", json={"domain": "exact", "response": "x", "reference": "x"}).json()["reward"] == 1.0


def test_bad_domains_option_fails_at_start():
    with pytest.raises(ConfigError, match="domains.code: unknown verifier 'nope'"):
        load_config(None, {"role": "env"}, ["domains.code=nope"])
    with pytest.raises(ConfigError, match="options.max_sessions"):
        load_config(None, {"role": "env"}, ["max_sessions=0"])


def test_slow_verification_is_cut_by_the_timeout():
    # 9^(9^(9^9)) makes sympy compute an integer with ~10^(3.7e8) digits: math-verify alone runs
    # for as long as memory lasts (checked by hand: > 15 s before being killed).
    with env_server(reward_timeout_s=0.3) as c:
        r = c.post("/reward", json={"domain": "math", "response": "\\boxed{9^{9^{9^{9}}}}", "reference": "7"})
        assert r.status_code == 200
        body = r.json()
        assert body["reward"] == 0.0 and body["info"]["timeout"] is True and "reward_timeout_s" in body["info"]["error"]
        metrics = c.get("/metrics").text
        assert 'rollflow_env_reward_timeouts_total{domain="math",verifier="math_verify"} 1.0' in metrics
        # The stuck worker was replaced: the next verification works.
        r = c.post("/reward", json={"domain": "math", "response": "\\boxed{7}", "reference": "7"})
        assert r.json()["reward"] == 1.0 and r.json()["info"]["timeout"] is False


# ---- bad input: 4xx naming the field, never a 500

GOOD_RESET = {"env": "frozen_lake", "seed": 1}
GOOD_REWARD = {"domain": "math", "response": "1", "reference": "1"}


@pytest.mark.parametrize("path, body, status, field", [
    ("/reset", {"env": 5, "seed": 1}, 400, "env"),
    ("/reset", {"env": "frozen_lake", "seed": "one"}, 400, "seed"),
    ("/reset", {"env": "frozen_lake", "seed": -1}, 400, "seed"),
    ("/reset", {"env": "frozen_lake", "seed": 1.5}, 400, "seed"),
    ("/reset", {"env": "frozen_lake", "seed": 2**53}, 400, "seed"),
    ("/reset", {"env": "frozen_lake", "seed": True}, 400, "seed"),
    ("/reset", {"env": "frozen_lake"}, 400, "seed"),
    ("/reset", {**GOOD_RESET, "sed": 2}, 400, "sed"),
    ("/reset", {**GOOD_RESET, "config": []}, 400, "config"),
    ("/reset", {**GOOD_RESET, "config": {"bogus": 1}}, 400, "config.bogus"),
    ("/reset", {**GOOD_RESET, "config": {"map_size": "big"}}, 400, "config.map_size"),
    ("/reset", {**GOOD_RESET, "config": {"desc": ["SH", "HG"]}}, 400, "config.desc"),
    ("/reset", {"env": "arithmetic", "seed": 1, "config": {"ops": ["%"]}}, 400, "config.ops.0"),
    ("/reset", {"env": "swe_lite", "seed": 1, "config": {"tiers": [1, 4]}}, 400, "config.tiers"),
    ("/reset", {"env": "nope", "seed": 1}, 400, "env"),
    ("/step", {"session": "nope", "index": 0, "action": "Left"}, 404, "session"),
    ("/step", {"session": 1, "index": 0, "action": "Left"}, 400, "session"),
    ("/step", {"session": "x", "index": 0, "action": None}, 400, "action"),
    ("/step", {"session": "x", "index": 0, "action": ["Left"]}, 400, "action"),
    ("/step", {"session": "x", "index": 0}, 400, "action"),
    ("/step", {"session": "x", "action": "Left"}, 400, "index"),
    ("/step", {"session": "x", "index": -1, "action": "Left"}, 400, "index"),
    ("/step", {"session": "x", "index": 1.0, "action": "Left"}, 400, "index"),
    ("/close", {}, 400, "session"),
    ("/close", {"session": {"id": "x"}}, 400, "session"),
    ("/reward", {**GOOD_REWARD, "domain": "chemistry"}, 400, "domain"),
    ("/reward", {**GOOD_REWARD, "response": 5}, 400, "response"),
    ("/reward", {**GOOD_REWARD, "reference": None}, 400, "reference"),
    ("/reward", {"domain": "math", "response": "1"}, 400, "reference"),
    ("/reward", {**GOOD_REWARD, "verifier": "nope"}, 400, "verifier"),
    ("/reward", {**GOOD_REWARD, "config": {"bogus": 1}}, 400, "config.bogus"),
    ("/reward", {**GOOD_REWARD, "config": {"float_rounding": "x"}}, 400, "config.float_rounding"),
])
def test_bad_requests_are_4xx_naming_the_field(client, path, body, status, field):
    r = client.post(path, json=body)
    assert r.status_code == status, r.text
    assert field in problem_fields(r)


def test_unknown_env_and_domain_list_the_known_ones(client):
    assert "known envs: arithmetic, frozen_lake" in client.post("/reset", json={"env": "nope", "seed": 1}).json()["error"]
    assert "known domains: code, exact, math" in client.post("/reward", json={**GOOD_REWARD, "domain": "x"}).json()["error"]


@pytest.mark.parametrize("path", ["/reset", "/step", "/close", "/reward"])
@pytest.mark.parametrize("content", [b"{not json", b"[]", b"null", b'"text"', b"\xff\xfe"])
def test_non_object_bodies_are_400(client, path, content):
    r = client.post(path, content=content, headers={"content-type": "application/json"})
    assert r.status_code == 400, r.text


# ---- /metrics

def test_metrics_count_sessions_steps_and_rewards():
    with env_server() as c:
        session = reset(c, desc=FIXED)["session"]
        step(c, session, "Right")
        step(c, session, "jump")
        reset(c, env="arithmetic")
        c.post("/reward", json={"domain": "exact", "response": "a", "reference": "a"})
        text = c.get("/metrics").text
        for line in [
            'rollflow_env_sessions_open{env="frozen_lake"} 1.0',
            'rollflow_env_sessions_open{env="arithmetic"} 1.0',
            'rollflow_env_resets_total{env="frozen_lake"} 1.0',
            'rollflow_env_steps_total{env="frozen_lake"} 2.0',
            'rollflow_env_invalid_actions_total{env="frozen_lake"} 1.0',
            'rollflow_env_rewards_total{domain="exact",verifier="exact_match"} 1.0',
        ]:
            assert line in text
        c.post("/close", json={"session": session})
        assert 'rollflow_env_sessions_open{env="frozen_lake"} 0.0' in c.get("/metrics").text
