"""Each index of a session is applied once (roles/env/steps.py): a retry gets the recorded answer, the action log one line."""
import hashlib
import json
import threading
from contextlib import contextmanager

import pytest
from fastapi.testclient import TestClient

from rollflow_engines.app import create_app
from rollflow_engines.config import ServeConfig
from rollflow_engines.envs.frozen_lake import FrozenLakeEnv
from rollflow_engines.roles.env.contracts import StepRequest

OPEN = ["SFFF", "FFFF", "FFFF", "FFFG"]  # no holes: every move is applied, so applying one twice shows in the position


@contextmanager
def env_server(tmp_path, **options):
    with TestClient(create_app(ServeConfig(role="env", options={"action_log": str(tmp_path / "actions.jsonl"), **options})),
                    raise_server_exceptions=False) as client:
        yield client


def log_lines(tmp_path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "actions.jsonl").read_text().splitlines()]


def new_session(client) -> str:
    return client.post("/reset", json={"env": "frozen_lake", "seed": 0, "config": {"desc": OPEN}}).json()["session"]


def step(client, session, index, action):
    return client.post("/step", json={"session": session, "index": index, "action": action})


def replayed(client) -> float:
    line = next(ln for ln in client.get("/metrics").text.splitlines() if ln.startswith("rollflow_env_steps_replayed_total"))
    return float(line.split()[-1])


def test_a_repeated_index_gets_the_recorded_answer_and_is_applied_once(tmp_path):
    with env_server(tmp_path) as c:
        session = new_session(c)
        first = step(c, session, 0, "Right")
        again = step(c, session, 0, "Right")
        assert first.status_code == again.status_code == 200 and again.json() == first.json()
        assert first.json()["info"]["position"] == [0, 1]
        # Had the repeat been applied, the lake would be at column 2 now and Down would land on [1, 2].
        assert step(c, session, 1, "Down").json()["info"]["position"] == [1, 1]
        assert replayed(c) == 1.0
        lines = log_lines(tmp_path)
        assert [(ln["session"], ln["index"], ln["env"]) for ln in lines] == [(session, 0, "frozen_lake"), (session, 1, "frozen_lake")]
        assert set(lines[0]) == {"session", "env", "index", "action_sha256", "reward", "done", "ts"}
        assert [ln["action_sha256"] for ln in lines] == [hashlib.sha256(a).hexdigest() for a in (b"Right", b"Down")]
        assert (lines[0]["reward"], lines[0]["done"]) == (0.0, False)


def test_the_same_index_with_another_action_is_a_409_naming_index(tmp_path):
    with env_server(tmp_path) as c:
        session = new_session(c)
        assert step(c, session, 0, "Right").status_code == 200
        r = step(c, session, 0, "Down")
        assert r.status_code == 409 and [p["field"] for p in r.json()["problems"]] == ["index"]
        assert "applied with another action" in r.json()["error"]
        assert len(log_lines(tmp_path)) == 1


@pytest.mark.parametrize("index", [2, 7])
def test_an_index_ahead_of_the_session_is_a_409_naming_index_and_the_expected_one(tmp_path, index):
    with env_server(tmp_path) as c:
        session = new_session(c)
        assert step(c, session, 0, "Right").status_code == 200
        r = step(c, session, index, "Down")
        assert r.status_code == 409 and r.json()["problems"][0] == {"field": "index", "given": index, "message": r.json()["problems"][0]["message"]}
        assert "the next step is index 1" in r.json()["error"]
        assert len(log_lines(tmp_path)) == 1


def test_an_index_older_than_the_last_is_a_409(tmp_path):
    with env_server(tmp_path) as c:
        session = new_session(c)
        for i, action in enumerate(["Right", "Down"]):
            assert step(c, session, i, action).status_code == 200
        r = step(c, session, 0, "Right")
        assert r.status_code == 409 and "the next step is index 2 (a retry may repeat index 1)" in r.json()["error"]


def test_the_retry_of_the_step_that_ended_the_episode_is_answered_after_close(tmp_path):
    # The client closes a session once a step says done; a retry of that step (its activity's worker died after the
    # close) must still get the answer, not a 404 that would rebuild and replay the whole episode.
    with env_server(tmp_path) as c:
        session = c.post("/reset", json={"env": "arithmetic", "seed": 2, "config": {"ops": ["+"]}}).json()
        a, _, b = session["info"]["question"].split()
        answer = str(int(a) + int(b))
        first = step(c, session["session"], 0, answer)
        assert first.json()["done"] is True
        assert c.post("/close", json={"session": session["session"]}).status_code == 200
        assert step(c, session["session"], 0, answer).json() == first.json()
        assert step(c, session["session"], 0, "0").status_code == 409
        assert step(c, session["session"], 1, answer).status_code == 404
        assert len(log_lines(tmp_path)) == 1 and replayed(c) == 1.0


class WatchedLock:
    """A session lock that says when a second caller has to wait for it."""

    def __init__(self):
        self._lock, self.waiting = threading.Lock(), threading.Semaphore(0)

    def acquire(self, blocking=True):
        return self._lock.acquire(blocking)

    def release(self):
        self._lock.release()

    def __enter__(self):
        if not self._lock.acquire(blocking=False):
            self.waiting.release()
            self._lock.acquire()
        return self

    def __exit__(self, *exc):
        self._lock.release()


def test_a_duplicate_that_arrives_while_its_step_runs_waits_and_gets_the_same_answer(tmp_path, monkeypatch):
    entered, gate, calls = threading.Event(), threading.Event(), []
    original = FrozenLakeEnv.step

    def gated(self, action):
        calls.append(action)
        entered.set()
        assert gate.wait(60), "the test never opened the gate"
        return original(self, action)

    monkeypatch.setattr(FrozenLakeEnv, "step", gated)
    with env_server(tmp_path) as c:
        role = c.app.state.env_role
        session = new_session(c)
        lock = role.sessions.get(session).lock = WatchedLock()
        answers = {}

        def send(name):
            answers[name] = role.step(StepRequest(session=session, index=0, action="Right"))

        first = threading.Thread(target=send, args=("first",))
        first.start()
        assert entered.wait(60)  # the first attempt is inside the env's step
        retry = threading.Thread(target=send, args=("retry",))
        retry.start()
        assert lock.waiting.acquire(timeout=60)  # the retry waits on the session while the step runs
        gate.set()
        first.join(60), retry.join(60)
        assert calls == ["Right"] and answers["retry"] == answers["first"]
        assert len(log_lines(tmp_path)) == 1 and replayed(c) == 1.0


def test_a_log_line_that_cannot_be_written_is_a_503_and_the_retry_writes_it(tmp_path, monkeypatch):
    import rollflow_engines.roles.env.steps as steps

    real_fsync, failures = steps.os.fsync, [OSError(28, "No space left on device")]

    def fsync(fd):
        if failures:
            raise failures.pop()
        real_fsync(fd)

    with env_server(tmp_path) as c:
        monkeypatch.setattr(steps.os, "fsync", fsync)  # the disk fills up after the server started
        session = new_session(c)
        r = step(c, session, 0, "Right")
        assert r.status_code == 503 and r.json()["problems"][0]["field"] == "action_log"
        retry = step(c, session, 0, "Right")
        assert retry.status_code == 200 and retry.json()["info"]["position"] == [0, 1]  # applied once, answered now
        assert [ln["index"] for ln in log_lines(tmp_path)] == [0]  # the failed try's line was cut off again
        assert step(c, session, 1, "Down").json()["info"]["position"] == [1, 1]
        assert [ln["index"] for ln in log_lines(tmp_path)] == [0, 1]


def test_without_the_option_there_is_no_log_and_steps_still_apply_once():
    with TestClient(create_app(ServeConfig(role="env")), raise_server_exceptions=False) as c:
        assert c.app.state.env_role.action_log is None
        session = new_session(c)
        assert step(c, session, 0, "Right").json() == step(c, session, 0, "Right").json()
        assert step(c, session, 1, "Down").json()["info"]["position"] == [1, 1]


def test_reset_reports_each_envs_step_bound_and_refuses_an_index_without_restore(tmp_path):
    with env_server(tmp_path, sandbox="none") as c:
        assert c.post("/reset", json={"env": "frozen_lake", "seed": 0}).json()["step_timeout_s"] == 5.0
        swe = c.post("/reset", json={"env": "swe_lite", "seed": 0, "config": {"command_timeout_s": 30, "grading_timeout_s": 200}}).json()
        assert swe["step_timeout_s"] == 30 + 200 + 10 + 10  # the command, the grading, the snapshot walk, the sandboxes' setup
        c.post("/close", json={"session": swe["session"]})
        r = c.post("/reset", json={"env": "frozen_lake", "seed": 0, "index": 3})
        assert r.status_code == 400 and r.json()["problems"][0]["field"] == "index"
