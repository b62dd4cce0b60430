"""Liveness from progress (liveness.py): /health turns 503 when work in flight stops moving, whatever the event loop does."""
from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
import socket

import httpx
import pytest
from fastapi.testclient import TestClient

from rollflow_engines.app import create_app
from rollflow_engines.config import ServeConfig, load_config
from rollflow_engines.liveness import Liveness, SystemdNotifier
from rollflow_engines.roles.inference import api

from inference.helpers import LONG, Gate, tokens_of, wait_until


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # what the servers use


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_work_in_flight_without_progress_is_a_stall_and_progress_clears_it():
    clock = FakeClock()
    live = Liveness(stall_after_s=30, clock=clock)
    counter = [0.0]
    live.watch_counter(lambda: counter[0])
    clock.now += 100
    assert not live.stalled(), "idle with nothing in flight is not a stall"
    live.started()
    clock.now += 29
    assert not live.stalled()
    clock.now += 2
    assert live.stalled()
    counter[0] += 1  # a token
    assert not live.stalled()
    clock.now += 31
    assert live.stalled()
    live.finished()
    assert not live.stalled() and live.report()["completed"] == 1 and live.report()["progress"] == 2


def test_an_excused_wait_is_not_a_stall():
    clock = FakeClock()
    live = Liveness(stall_after_s=30, clock=clock)
    paused = [True]
    live.excuse_while(lambda: paused[0])
    live.started()
    clock.now += 60
    assert not live.stalled()
    paused[0] = False
    clock.now += 29
    assert not live.stalled(), "the stall clock restarted when the excused wait was last seen"
    clock.now += 2
    assert live.stalled()


def test_health_of_a_trainer_mid_step_follows_its_micro_batches():
    app = create_app(load_config(None, {"role": "trainer", "options": {"stall_after_s": 90}}))
    live, server = app.state.liveness, app.state.trainer
    clock = live._clock = FakeClock()
    client = TestClient(app)
    live.started()  # a train step in flight
    clock.now += 91
    stalled = client.get("/health")
    assert stalled.status_code == 503 and stalled.json()["status"] == "stalled"
    assert stalled.json()["liveness"]["inflight"] == 1
    server.backend.micro_batches += 1
    assert client.get("/health").status_code == 200


@pytest.mark.anyio
async def test_a_held_generation_stalls_the_server_until_its_tokens_move_and_a_pause_excuses_it():
    app = create_app(ServeConfig(role="inference", backend="sim", options={"stall_after_s": 30}))
    live = app.state.liveness
    clock = live._clock = FakeClock()
    async with app.router.lifespan_context(app):
        engine = app.state.inference_engine
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://inference", timeout=60) as client:
            gate = Gate(engine, lambda batch: tokens_of(batch, 5))  # the backend deadlocks at its 5th token
            request = asyncio.create_task(client.post("/v1/completions", json={"prompt": [1, 2, 3], "max_tokens": 20, **LONG["sim"]}))
            await gate.wait_reached()
            assert (await client.get("/health")).status_code == 200
            clock.now += 31
            health = await client.get("/health")
            assert health.status_code == 503 and health.json()["liveness"]["idle_s"] >= 30
            assert (await client.post("/pause", json={"mode": "keep"})).status_code == 200
            clock.now += 100
            assert (await client.get("/health")).status_code == 200, "a paused server holds its requests by design"
            await client.post("/resume")
            clock.now += 31
            assert (await client.get("/health")).status_code == 503
            gate.open()
            await wait_until(lambda: live.progress > 0 and not live.stalled(), "tokens to move again")
            assert (await request).status_code == 200
            assert (await client.get("/health")).status_code == 200


@pytest.mark.anyio
async def test_a_stalled_stream_sends_no_keep_alive(monkeypatch):
    monkeypatch.setattr(api, "SSE_KEEPALIVE_S", 0.001)
    waits, release = [0], asyncio.Event()

    def stalled() -> bool:  # asked once per keep-alive interval; the third time lets the chunk come
        waits[0] += 1
        if waits[0] == 3:
            release.set()
        return True

    class Chunk(api.BaseModel):
        n: int

    async def chunks():
        await release.wait()
        yield Chunk(n=1)

    sent = [piece async for piece in api._sse(chunks(), stalled)]
    assert waits[0] >= 3 and api.KEEPALIVE not in sent
    assert sent[-1] == b"data: [DONE]\n\n"


@pytest.mark.anyio
async def test_the_watchdog_is_fed_under_systemd_and_not_while_stalled(tmp_path, monkeypatch):
    path = str(tmp_path / "notify")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(path)
        sock.setblocking(False)
        monkeypatch.setenv("NOTIFY_SOCKET", path)
        monkeypatch.setattr("rollflow_engines.liveness.WATCHDOG_EVERY_S", 0.0)
        monkeypatch.setattr("rollflow_engines.liveness.LAG_TICK_S", 0.001)
        live = Liveness(stall_after_s=30, clock=FakeClock())
        loop = asyncio.get_running_loop()
        watcher = asyncio.create_task(live.watch_loop())
        try:
            got = [(await asyncio.wait_for(loop.sock_recv(sock, 64), 30)).decode() for _ in range(3)]
            assert got == ["READY=1", "WATCHDOG=1", "WATCHDOG=1"]
            live.started()
            live._clock.now += 31
            assert live.stalled()
            while True:  # drain what was sent before the stall, then nothing more may come
                try:
                    sock.recv(64)
                except BlockingIOError:
                    break
            ticks = live.loop_ticks
            await wait_until(lambda: live.loop_ticks >= ticks + 5, "the watch loop to tick five more times")
            with pytest.raises(BlockingIOError):
                sock.recv(64)
        finally:
            watcher.cancel()


def test_no_notify_socket_means_no_notification():
    SystemdNotifier(None).send("READY=1")  # nothing to send to: no error


def test_work_past_its_own_bound_is_overdue_whatever_else_moves():
    clock = FakeClock()
    live = Liveness(stall_after_s=180, clock=clock)
    live.started()
    with live.bounded(5):
        clock.now += 5 + 29
        live.finished()  # other requests keep completing: progress moves
        live.started()
        assert not live.stalled()
        clock.now += 2
        assert live.overdue() == 1 and live.stalled()
    assert live.overdue() == 0 and not live.stalled()


def test_an_env_step_past_its_env_s_step_timeout_makes_the_env_server_stalled(monkeypatch):
    from rollflow_engines.envs.frozen_lake import FrozenLakeEnv

    app = create_app(load_config(None, {"role": "env", "options": {"sandbox": "none"}}))
    live = app.state.liveness
    clock = live._clock = FakeClock()
    client = TestClient(app)
    seen: list[int] = []

    def step_while_the_clock_runs_past_its_bound(self, action):  # what a deadlocked env looks like from /health
        clock.now += self.step_timeout_s() + 31
        seen.append(client.get("/health").status_code)
        return original(self, action)

    original = FrozenLakeEnv.step
    monkeypatch.setattr(FrozenLakeEnv, "step", step_while_the_clock_runs_past_its_bound)
    session = client.post("/reset", json={"env": "frozen_lake", "seed": 1, "config": {}}).json()["session"]
    assert client.post("/step", json={"session": session, "index": 0, "action": "<answer>Left</answer>"}).status_code == 200
    assert seen == [503]
    assert client.get("/health").status_code == 200


@asynccontextmanager
async def deadlocked_sim_server():
    """A sim inference server (stall_after_s 30, a fake clock) whose fourth decode step never returns, with a request
    in flight that has had its three tokens: yields (liveness, clock, client, app, the request's task)."""
    app = create_app(ServeConfig(role="inference", backend="sim", options={"stall_after_s": 30, "sim": {"deadlock_after_steps": 3}}))
    live = app.state.liveness
    clock = live._clock = FakeClock()
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://inference", timeout=60) as client:
            request = asyncio.create_task(client.post("/v1/completions", json={"prompt": [1, 2, 3], "max_tokens": 20, **LONG["sim"]}))
            await wait_until(lambda: live.report()["progress"] >= 3, "three decode steps")
            try:
                yield live, clock, client, app, request
            finally:
                request.cancel()


@pytest.mark.anyio
async def test_a_sim_inference_server_modelling_a_deadlock_stops_its_tokens_but_answers_and_reports_the_stall():
    async with deadlocked_sim_server() as (live, clock, client, _, request):
        for _ in range(20):  # the loop goes on turning; the fourth step never returns
            await asyncio.sleep(0)
        assert live.report()["progress"] == 3 and not request.done()
        assert (await client.get("/health")).status_code == 200, "no stall before stall_after_s"
        clock.now += 31
        health = await client.get("/health")
        assert health.status_code == 503 and health.json()["status"] == "stalled"


@pytest.mark.anyio
async def test_a_sim_trainer_modelling_a_deadlock_hangs_its_next_step_and_reports_the_stall():
    from trainer.helpers import group_batch, make_app

    app = make_app(stall_after_s=90, sim_deadlock_after_steps=1)
    live = app.state.liveness
    clock = live._clock = FakeClock()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://trainer", timeout=60) as client:
        first = await client.post("/train_step", json={"step": 0, "batch": group_batch()})
        assert first.status_code == 200 and first.json()["version"] == 1
        second = asyncio.create_task(client.post("/train_step", json={"step": 1, "batch": group_batch(prefix="x")}))
        await wait_until(lambda: app.state.trainer.training_step is not None, "the second step inside the trainer")
        clock.now += 91
        health = await client.get("/health")
        assert health.status_code == 503 and health.json()["liveness"]["inflight"] == 1
        assert app.state.trainer.backend.version == 1, "the hung step changed nothing"
        second.cancel()


def test_sim_deadlock_options_belong_to_the_sim_backends():
    from rollflow_engines.roles.trainer import Options

    with pytest.raises(ValueError, match="(?s)sim_deadlock_after_steps.*backend torch trains for real"):
        Options(backend="torch", sim_deadlock_after_steps=3)
    with pytest.raises(ValueError, match="sim_seconds_per_sample"):
        Options(backend="torch", sim_seconds_per_sample=0.1)
    assert Options(backend="sim", sim_deadlock_after_steps=3).sim_deadlock_after_steps == 3


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["keep", "wait"])
async def test_a_pause_does_not_excuse_a_decode_step_that_never_returns(mode):
    # A pause arriving at a deadlocked backend waits on the step forever ("keep": for the step lock; "wait": for the
    # batch to drain). Excusing the stall because the server is paused would leave it alive and useless for good.
    async with deadlocked_sim_server() as (_, clock, client, app, _request):
        pause = asyncio.create_task(client.post("/pause", json={"mode": mode}))
        await wait_until(lambda: app.state.inference_engine.state()["paused"], "the pause to arrive")
        assert not pause.done(), "the pause waits on the step that never returns"
        clock.now += 31
        health = await client.get("/health")
        assert health.status_code == 503 and health.json()["status"] == "stalled"
        pause.cancel()


@pytest.mark.anyio
async def test_a_request_the_backend_cannot_admit_fails_alone_and_the_server_serves_on(monkeypatch):
    app = create_app(ServeConfig(role="inference", backend="sim", options={}))
    async with app.router.lifespan_context(app):
        engine = app.state.inference_engine
        admit = engine._admit

        def admit_all_but_prompt_9(seq):
            if seq.prompt == [9]:
                raise IndexError("a backend bug on this prompt")
            admit(seq)

        monkeypatch.setattr(engine, "_admit", admit_all_but_prompt_9)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app, raise_app_exceptions=False), base_url="http://inference", timeout=60) as client:
            bad = await client.post("/v1/completions", json={"prompt": [9], "max_tokens": 3})
            good = await client.post("/v1/completions", json={"prompt": [1, 2], "max_tokens": 3})
            health = await client.get("/health")
    assert bad.status_code == 500
    assert good.status_code == 200 and len(good.json()["choices"][0]["token_ids"]) == 3
    assert health.status_code == 200


@pytest.mark.anyio
async def test_a_scheduler_loop_that_dies_is_logged_at_once_and_fails_health_with_its_cause(monkeypatch, caplog):
    app = create_app(ServeConfig(role="inference", backend="sim", options={}))
    async with app.router.lifespan_context(app):
        engine = app.state.inference_engine

        def broken():
            raise RuntimeError("scheduler bug")

        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://inference", timeout=60) as client:
            assert (await client.get("/health")).status_code == 200
            monkeypatch.setattr(engine, "_drop_cancelled", broken)  # what the loop runs first on its next turn
            request = asyncio.create_task(client.post("/v1/completions", json={"prompt": [1], "max_tokens": 3}))
            await wait_until(lambda: engine.failure is not None, "the loop to die")
            health = await client.get("/health")
            request.cancel()
    assert health.status_code == 503 and health.json()["status"] == "failed"
    assert "the scheduler loop died: RuntimeError: scheduler bug" in health.json()["error"]
    assert any("the scheduler loop died" in r.getMessage() and r.exc_info for r in caplog.records)
