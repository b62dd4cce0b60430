"""contracts/env fixtures are what the server really answers: replay the requests, compare the responses."""
import json
from pathlib import Path

from fastapi.testclient import TestClient

from rollflow_engines.app import create_app
from rollflow_engines.config import ServeConfig

FIXTURES = Path(__file__).resolve().parents[3] / "contracts" / "env"


def load(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def test_reset_and_step_fixtures_match_the_server():
    with TestClient(create_app(ServeConfig(role="env"))) as c:
        reset = c.post("/reset", json=load("ResetRequest.json")).json()
        expected = load("ResetResponse.json")
        assert {**reset, "session": expected["session"]} == expected
        step = c.post("/step", json={**load("StepRequest.json"), "session": reset["session"]}).json()
        assert step == load("StepResponse.json")
        step = c.post("/step", json={"session": reset["session"], "index": 1, "action": "jump"}).json()
        assert step == load("StepResponse.invalid.json")
        closed = c.post("/close", json={**load("CloseRequest.json"), "session": reset["session"]}).json()
        assert closed == load("CloseResponse.json")
        assert c.post("/reset", json=load("ResetRequest.arithmetic.json")).status_code == 200


def test_reward_fixtures_match_the_server():
    with TestClient(create_app(ServeConfig(role="env"))) as c:
        assert c.post("/reward", json=load("RewardRequest.json")).json() == load("RewardResponse.json")
        body = c.post("/reward", json=load("RewardRequest.verifier.json")).json()
        assert body == {"reward": 1.0, "info": {"verifier": "exact_match", "domain": "qa", "timeout": False}}
