"""The deadline of sandboxed verifiers is enforced (rewards/deadline.py): a call that has not returned by
reward_timeout_s + grace has its workspaces removed, and the request answers 0 with info.timeout, counted as
a timeout; the SandboxError the removal causes is never a 503, a real one still is.

The verifiers here are registered for one test each; they block on things the test controls (a sandboxed
`sleep 600`, a threading.Event) and record what happened to them. Deadlines only guard against hangs."""
import json
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient

from rollflow_engines.app import create_app
from rollflow_engines.config import ServeConfig
from rollflow_engines.rewards import VERIFIERS
from rollflow_engines.rewards.deadline import _Call
from rollflow_engines.rewards.registry import Verifier
from rollflow_engines.sandbox import Limits, SandboxError, SandboxSettings, current
from rollflow_engines.sandbox.settings import on_open
from rollflow_engines.sandbox.uids import processes_by_uid

HANG_GUARD_S = 60
ADD = json.dumps({"style": "stdio", "tests": [{"input": "1 2\n", "output": "3\n"}]})
CORRECT = "a, b = map(int, input().split())\nprint(a + b)\n"


class Recorder:
    """What the test verifiers did: the workspaces they opened, how each call ended."""

    def __init__(self):
        self.workspaces, self.ended, self.lock = [], [], threading.Lock()
        self.release = threading.Event()
        self.all_ended = threading.Event()
        self.expected_calls = 1

    def end(self, outcome):
        with self.lock:
            self.ended.append(outcome)
            if len(self.ended) >= self.expected_calls:
                self.all_ended.set()


@pytest.fixture
def recorder(monkeypatch):
    rec = Recorder()

    def sleeps_in_its_sandbox(prompt, response, reference, config, limit_s):
        ws = current().open(files={"x": "1"})
        with rec.lock:
            rec.workspaces.append(ws)
        try:
            with ws:
                ws.run(["sleep", "600"], limits=Limits(wall_s=600))
            rec.end("returned")
        except SandboxError as e:
            rec.end(e)
            raise
        return 1.0, {}

    def blocks_outside_any_sandbox(prompt, response, reference, config, limit_s):
        rec.release.wait(HANG_GUARD_S)
        rec.end("released")
        return 1.0, {}

    def fails_its_sandbox(prompt, response, reference, config, limit_s):
        raise SandboxError("bwrap broke (a failure of the test's making)")

    for fn in (sleeps_in_its_sandbox, blocks_outside_any_sandbox, fails_its_sandbox):
        monkeypatch.setitem(VERIFIERS, fn.__name__, Verifier(name=fn.__name__, fn=fn, isolated=False, sandboxed=True))
    yield rec
    rec.release.set()


@pytest.fixture
def client(tmp_path):
    app = create_app(ServeConfig(role="env", options={"sandbox_root": str(tmp_path / "sandboxes"), "reward_timeout_s": 0.5}))
    app.state.env_role.deadlines.grace_s = 0.1
    with TestClient(app) as c:
        yield c


def reward(client, verifier, response="x", reference="x"):
    return client.post("/reward", json={"domain": "test", "verifier": verifier, "response": response, "reference": reference})


def metric(client, name, verifier):
    for line in client.get("/metrics").text.splitlines():
        if line.startswith(f"rollflow_env_{name}_total{{") and f'verifier="{verifier}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_a_verifier_stuck_in_its_sandbox_is_stopped_and_scored_as_a_timeout(client, recorder):
    r = reward(client, "sleeps_in_its_sandbox")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["reward"] == 0.0 and body["info"]["timeout"] is True and "reward_timeout_s=0.5" in body["info"]["error"]
    # The answer comes after the stop: the workspace and its processes are gone already.
    [ws] = recorder.workspaces
    assert not ws.record.exists() and processes_by_uid().get(ws.uid) is None
    assert recorder.all_ended.wait(HANG_GUARD_S)
    assert isinstance(recorder.ended[0], SandboxError) and "was removed" in str(recorder.ended[0])
    assert client.app.state.env_role.deadlines.stops == 1
    assert metric(client, "reward_timeouts", "sleeps_in_its_sandbox") == 1
    assert metric(client, "reward_infra_errors", "sleeps_in_its_sandbox") == 0
    assert metric(client, "reward_errors", "sleeps_in_its_sandbox") == 0


def test_a_verifier_blocked_outside_any_sandbox_still_gets_an_answer(client, recorder):
    r = reward(client, "blocks_outside_any_sandbox")
    assert r.status_code == 200 and r.json()["reward"] == 0.0 and r.json()["info"]["timeout"] is True
    assert recorder.ended == []  # answered while the call is still blocked: a thread cannot be killed
    recorder.release.set()
    assert recorder.all_ended.wait(HANG_GUARD_S) and recorder.ended == ["released"]


def test_a_real_sandbox_failure_before_the_deadline_is_still_a_503(client, recorder):
    r = reward(client, "fails_its_sandbox")
    assert r.status_code == 503 and r.json()["code"] == "sandbox_failed" and "bwrap broke" in r.json()["error"]
    assert client.app.state.env_role.deadlines.stops == 0
    assert metric(client, "reward_infra_errors", "fails_its_sandbox") == 1
    assert metric(client, "reward_timeouts", "fails_its_sandbox") == 0


def test_more_stuck_calls_than_threads_do_not_starve_the_server(client, recorder):
    threads = client.app.state.env_role.deadlines._pool._max_workers
    recorder.expected_calls = threads + 2
    with ThreadPoolExecutor(threads + 2) as pool:
        answers = list(pool.map(lambda _: reward(client, "sleeps_in_its_sandbox"), range(threads + 2)))
    assert [(a.status_code, a.json()["reward"], a.json()["info"]["timeout"]) for a in answers] == [(200, 0.0, True)] * (threads + 2)
    assert recorder.all_ended.wait(HANG_GUARD_S)
    assert all(isinstance(e, SandboxError) for e in recorder.ended)
    assert all(not ws.record.exists() for ws in recorder.workspaces)
    client.app.state.env_role.options.reward_timeout_s = 60  # room for a real program on a busy machine
    r = client.post("/reward", json={"domain": "code", "response": CORRECT, "reference": ADD})
    assert r.status_code == 200 and r.json()["reward"] == 1.0, r.text


def test_a_call_that_returns_in_time_is_not_stopped(client):
    client.app.state.env_role.options.reward_timeout_s = 60
    r = client.post("/reward", json={"domain": "code", "response": CORRECT, "reference": ADD})
    assert r.status_code == 200 and r.json()["reward"] == 1.0 and r.json()["info"]["timeout"] is False
    assert client.app.state.env_role.deadlines.stops == 0


def test_a_workspace_opened_after_the_stop_is_removed_at_once(tmp_path):
    root = tmp_path / "sandboxes"
    call = _Call()
    call.stop()
    token = on_open.set(call.opened)
    try:
        with pytest.raises(SandboxError, match="stopped at its deadline"):
            SandboxSettings(root=root).open(files={"x": "1"})
    finally:
        on_open.reset(token)
    assert list(root.glob("*/*")) == []


def test_workspaces_opened_outside_a_verifier_call_are_not_watched(tmp_path):
    assert on_open.get() is None
    with SandboxSettings(root=tmp_path / "sandboxes").open() as ws:
        assert ws.record.exists()
