"""Session table: idle sessions expire (fake clock, no sleeping), max_sessions is enforced, close is safe."""
from contextlib import contextmanager

import pytest
from fastapi.testclient import TestClient

from rollflow_engines.app import create_app
from rollflow_engines.config import ServeConfig
from rollflow_engines.envs import BaseEnv
from rollflow_engines.errors import NotFoundError
from rollflow_engines.roles.env.sessions import SessionStore


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class StubEnv(BaseEnv):
    name = "stub"

    def __init__(self) -> None:
        self.closed = 0

    def reset(self, seed, config):
        return ""

    def info(self):
        return {}

    def step(self, action):
        raise NotImplementedError

    def close(self) -> None:
        self.closed += 1


@contextmanager
def env_server(**options):
    with TestClient(create_app(ServeConfig(role="env", options=options))) as client:
        yield client


def test_store_expires_idle_sessions_and_remembers_why():
    clock = FakeClock()
    closed = []
    store = SessionStore(max_sessions=10, ttl_s=60, clock=clock, on_close=lambda s, why: closed.append((s.id, why)))
    old, fresh = StubEnv(), StubEnv()
    a = store.open("stub", old)
    clock.now += 50
    b = store.open("stub", fresh)
    clock.now += 20  # a idle 70 s, b idle 20 s
    assert store.sweep() == 1
    assert closed == [(a.id, "expired")] and old.closed == 1 and fresh.closed == 0
    assert store.get(b.id) is b
    with pytest.raises(NotFoundError) as e:
        store.get(a.id)
    assert e.value.field == "session" and "idle" in e.value.message


def test_store_never_expires_a_session_that_is_stepping():
    clock = FakeClock()
    store = SessionStore(max_sessions=10, ttl_s=60, clock=clock)
    s = store.open("stub", StubEnv())
    clock.now += 100
    with s.lock:  # a step in progress
        assert store.sweep() == 0
    assert store.sweep() == 1


def test_store_close_is_idempotent_and_closes_the_env_once():
    store = SessionStore(max_sessions=10, ttl_s=60)
    env = StubEnv()
    s = store.open("stub", env)
    assert store.close(s.id) is True
    assert store.close(s.id) is False
    assert store.close("never-existed") is False
    assert env.closed == 1 and len(store) == 0


def test_idle_sessions_expire_over_http():
    with env_server(session_ttl_s=30) as c:
        clock = FakeClock()
        c.app.state.env_role.sessions.clock = clock
        session = c.post("/reset", json={"env": "frozen_lake", "seed": 1}).json()["session"]
        clock.now += 20
        assert c.post("/step", json={"session": session, "index": 0, "action": "Down"}).status_code == 200  # use resets the idle time
        clock.now += 20
        assert c.post("/step", json={"session": session, "index": 1, "action": "Up"}).status_code == 200
        clock.now += 31
        r = c.post("/step", json={"session": session, "index": 2, "action": "Down"})
        assert r.status_code == 404 and "session_ttl_s=30" in r.json()["error"]
        metrics = c.get("/metrics").text
        assert 'rollflow_env_sessions_expired_total{env="frozen_lake"} 1.0' in metrics
        assert 'rollflow_env_sessions_open{env="frozen_lake"} 0.0' in metrics


def test_max_sessions_is_429_until_one_is_closed():
    with env_server(max_sessions=2) as c:
        ids = [c.post("/reset", json={"env": "arithmetic", "seed": i}).json()["session"] for i in range(2)]
        r = c.post("/reset", json={"env": "arithmetic", "seed": 3})
        assert r.status_code == 429 and "max_sessions (2)" in r.json()["error"]
        assert "rollflow_env_sessions_rejected_total 1.0" in c.get("/metrics").text
        c.post("/close", json={"session": ids[0]})
        assert c.post("/reset", json={"env": "arithmetic", "seed": 3}).status_code == 200


def test_concurrent_steps_on_one_session_run_one_at_a_time():
    # arithmetic ends after one step: of many simultaneous steps at index 1 (the episode is over) exactly one
    # (at index 0) ran; the rest get 409 (steps at index 0 would be answered from the record: test_env_steps_once).
    from concurrent.futures import ThreadPoolExecutor

    from rollflow_engines.errors import ConflictError
    from rollflow_engines.roles.env.contracts import StepRequest

    with env_server() as c:
        role = c.app.state.env_role
        session = c.post("/reset", json={"env": "arithmetic", "seed": 2}).json()["session"]

        def attempt(_):
            try:
                return role.step(StepRequest(session=session, index=int(_ > 0), action="0")).done
            except ConflictError:
                return "conflict"

        with ThreadPoolExecutor(max_workers=8) as pool:
            outcomes = list(pool.map(attempt, range(16)))
        assert outcomes.count(True) == 1 and outcomes.count("conflict") == 15
