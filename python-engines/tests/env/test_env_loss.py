"""on_env_loss: every env declares one at registration, the server reports it with each reset, and replay is sound
for the envs that declare it (a fresh session at the same seed, the recorded actions applied again, is the same episode)."""
import pytest
from fastapi.testclient import TestClient

from rollflow_engines.app import create_app
from rollflow_engines.config import ServeConfig
from rollflow_engines.envs import BaseEnv, ENVS, register_env


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(ServeConfig(role="env", options={})), raise_server_exceptions=False) as c:
        yield c


def test_every_registered_env_declares_a_policy():
    assert {name: cls.on_env_loss for name, cls in ENVS.items()} == {"frozen_lake": "replay", "arithmetic": "replay", "swe_lite": "replay", "swe": "replay"}


@pytest.mark.parametrize("declared", [None, "retry"])
def test_an_env_without_a_valid_declaration_is_refused_at_registration(declared):
    attrs = {"name": "undeclared", "reset": lambda s, seed, c: "", "info": lambda s: {}, "step": lambda s, a: None}
    if declared is not None:
        attrs["on_env_loss"] = declared
    with pytest.raises(ValueError, match=r"env 'undeclared' declares on_env_loss = .*expected one of replay, restart, drop"):
        register_env(type("Undeclared", (BaseEnv,), attrs))
    assert "undeclared" not in ENVS


@pytest.mark.parametrize("env, config, actions", [
    ("frozen_lake", {"map_size": 5, "is_slippery": True}, ["Down", "Right", "garbage", "Down", "Right"]),
    ("arithmetic", {}, []),
])
def test_replay_rebuilds_the_same_episode(client, env, config, actions):
    def play(session, moves):
        return [client.post("/step", json={"session": session, "index": i, "action": a}).json() for i, a in enumerate(moves)]

    first = client.post("/reset", json={"env": env, "seed": 77, "config": config}).json()
    assert first["on_env_loss"] == "replay"
    lived = play(first["session"], actions)
    # The server lost the session: the client rebuilds it from the seed and the recorded actions.
    again = client.post("/reset", json={"env": env, "seed": 77, "config": config}).json()
    replayed = play(again["session"], actions)
    assert (again["observation"], replayed) == (first["observation"], lived)
    assert client.post("/step", json={"session": again["session"], "index": len(actions), "action": "<answer>Up</answer>"}).json() == \
        client.post("/step", json={"session": first["session"], "index": len(actions), "action": "<answer>Up</answer>"}).json()
