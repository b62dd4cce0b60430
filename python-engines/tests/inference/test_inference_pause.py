"""Pause modes, weight versions across an update, held requests and continuous
batching, on both step-wise backends. The scheduler is held at exact token
counts with a Gate (no sleeps); waits poll engine state with a deadline."""
import asyncio

import pytest

from rollflow_engines.models import build_tiny_model

from .helpers import LONG, Gate, as_export, serve, tokens_of, wait_until

pytestmark = pytest.mark.anyio
BACKENDS = ["sim", "torch"]


async def post_ok(client, path: str, body: dict | None = None) -> dict:
    r = await client.post(path, json=body)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.fixture(scope="module")
def other_weights(tmp_path_factory) -> dict:
    """Per backend, an export of other weights: for torch a tiny model with seed 1, saved as save_pretrained does."""
    root = tmp_path_factory.mktemp("weights")
    return {"sim": as_export(root / "sim", "sim"), "torch": as_export(build_tiny_model("default", 1, root / "torch"), "torch")}


@pytest.mark.parametrize("backend", BACKENDS)
async def test_abort_returns_partial_tokens_and_the_resubmission_completes_them(backend):
    prompt, max_tokens = [5, 6, 7, 8], 30
    async with serve(backend) as (client, engine):
        reference = await post_ok(client, "/v1/completions", {"prompt": prompt, "max_tokens": max_tokens, "seed": 3, **LONG[backend]})
        gate = Gate(engine, lambda batch: tokens_of(batch, 7))
        first = asyncio.create_task(post_ok(client, "/v1/completions", {"prompt": prompt, "max_tokens": max_tokens, "seed": 3, **LONG[backend]}))
        await gate.wait_reached()
        paused = await post_ok(client, "/pause", {"mode": "abort"})
        assert (paused["aborted"], paused["frozen"]) == (1, 0)
        gate.open()
        partial = (await first)["choices"][0]
        assert partial["finish_reason"] == "abort"
        assert len(partial["token_ids"]) == len(partial["logprobs"]) == 7
        assert partial["version_spans"] == [{"version": 0, "start": 0, "end": 7}]

        # The bridge re-submits prompt + partial tokens; while paused it is held.
        rest = asyncio.create_task(post_ok(client, "/v1/completions", {
            "prompt": prompt + partial["token_ids"], "max_tokens": max_tokens - 7, "seed": 3, **LONG[backend]}))
        await wait_until(lambda: engine.state()["waiting"] == 1, "the re-submission to be queued")
        assert not rest.done() and engine.state()["running"] == 0
        await post_ok(client, "/resume")
        continuation = (await rest)["choices"][0]
    assert continuation["finish_reason"] == "length"
    assert len(partial["token_ids"]) + len(continuation["token_ids"]) == max_tokens
    assert partial["token_ids"] == reference["choices"][0]["token_ids"][:7]
    if backend == "torch":  # greedy and the same weights: the pieces make up the uninterrupted answer
        assert partial["token_ids"] + continuation["token_ids"] == reference["choices"][0]["token_ids"]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_keep_pause_with_a_weight_update_gives_two_contiguous_spans(backend, other_weights):
    request = {"prompt": [9, 10, 11], "max_tokens": 20, **LONG[backend]}
    async with serve(backend) as (client, engine):
        reference = await post_ok(client, "/v1/completions", request)
        gate = Gate(engine, lambda batch: tokens_of(batch, 6))
        task = asyncio.create_task(post_ok(client, "/v1/completions", request))
        await gate.wait_reached()
        paused = await post_ok(client, "/pause", {"mode": "keep"})
        assert (paused["aborted"], paused["frozen"]) == (0, 1)
        gate.open()
        update = await post_ok(client, "/update_weights", {"path": str(other_weights[backend]), "version": 3})
        assert (update["previous_version"], update["version"]) == (0, 3)
        assert not task.done() and engine.state()["running"] == 1  # frozen, its HTTP call still open
        await post_ok(client, "/resume")
        choice = (await task)["choices"][0]
    assert choice["finish_reason"] == "length" and len(choice["token_ids"]) == 20
    assert choice["version_spans"] == [{"version": 0, "start": 0, "end": 6}, {"version": 3, "start": 6, "end": 20}]
    assert choice["token_ids"][:6] == reference["choices"][0]["token_ids"][:6]
    if backend == "torch":  # new weights from token 6 on: the next token's logprob comes from another model
        assert choice["logprobs"][:6] == reference["choices"][0]["logprobs"][:6]
        assert choice["logprobs"][6] != reference["choices"][0]["logprobs"][6]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_wait_pause_returns_once_in_flight_requests_finish_and_holds_new_ones(backend):
    request = {"prompt": [3, 4], "max_tokens": 12, **LONG[backend]}
    async with serve(backend) as (client, engine):
        gate = Gate(engine, lambda batch: tokens_of(batch, 4))
        first = asyncio.create_task(post_ok(client, "/v1/completions", request))
        await gate.wait_reached()
        in_flight = engine.running[0]
        pause = asyncio.create_task(post_ok(client, "/pause", {"mode": "wait"}))
        await wait_until(lambda: engine.state()["pause_mode"] == "wait", "the pause to take effect")
        late = asyncio.create_task(post_ok(client, "/v1/completions", {**request, "max_tokens": 3}))
        await wait_until(lambda: engine.state()["waiting"] == 1, "the late request to be queued")
        # The in-flight request is held at 4 tokens by the gate, so the pause cannot be done.
        assert not pause.done() and not first.done()
        gate.open()
        paused = await pause
        assert in_flight.finish_reason == "length", "/pause returned before the in-flight request finished"
        assert (await first)["choices"][0]["finish_reason"] == "length"
        assert len((await first)["choices"][0]["token_ids"]) == 12
        assert paused == {"mode": "wait", "aborted": 0, "frozen": 0, "version": 0}
        assert not late.done() and engine.state()["waiting"] == 1
        await post_ok(client, "/resume")
        assert (await late)["choices"][0]["finish_reason"] == "length"


@pytest.mark.parametrize("backend", BACKENDS)
async def test_requests_arriving_while_paused_run_on_the_weights_loaded_at_resume(backend, other_weights):
    async with serve(backend) as (client, engine):
        await post_ok(client, "/pause", {"mode": "abort"})
        held = asyncio.create_task(post_ok(client, "/v1/completions", {"prompt": [7], "max_tokens": 4, "n": 2, **LONG[backend]}))
        await wait_until(lambda: engine.state()["waiting"] == 2, "both samples to be queued")
        await post_ok(client, "/update_weights", {"path": str(other_weights[backend]), "version": 1})
        assert not held.done()
        await post_ok(client, "/resume")
        body = await held
    assert [c["version_spans"] for c in body["choices"]] == [[{"version": 1, "start": 0, "end": 4}]] * 2


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_short_request_submitted_after_a_long_one_finishes_first(backend):
    async with serve(backend) as (client, engine):
        gate = Gate(engine, lambda batch: tokens_of(batch, 2))
        finished: list[str] = []

        async def run(name: str, max_tokens: int) -> None:
            await post_ok(client, "/v1/completions", {"prompt": [1, 2, 3], "max_tokens": max_tokens, **LONG[backend]})
            finished.append(name)

        long = asyncio.create_task(run("long", 60))
        await gate.wait_reached()  # the long request is running, 2 tokens in
        short = asyncio.create_task(run("short", 3))
        await wait_until(lambda: engine.state()["waiting"] == 1, "the short request to be queued")
        gate.open()
        await asyncio.gather(long, short)
    assert finished == ["short", "long"]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_requests_beyond_max_batch_wait_for_a_free_slot(backend):
    async with serve(backend, max_batch=2) as (client, engine):
        gate = Gate(engine, lambda batch: tokens_of(batch, 1))
        tasks = [asyncio.create_task(post_ok(client, "/v1/completions", {"prompt": [4, i + 5], "max_tokens": 5, **LONG[backend]}))
                 for i in range(3)]
        await gate.wait_reached()
        await wait_until(lambda: engine.state()["waiting"] == 1, "the third request to be queued")
        assert engine.state()["running"] == 2
        gate.open()
        bodies = await asyncio.gather(*tasks)
    assert all(len(b["choices"][0]["token_ids"]) == 5 for b in bodies)


async def test_a_client_that_goes_away_frees_its_slot():
    async with serve("sim", sim={"c0": 0.001}) as (client, engine):
        task = asyncio.create_task(client.post("/v1/completions", json={"prompt": [1], "max_tokens": 4000, **LONG["sim"]}))
        await wait_until(lambda: engine.state()["running"] == 1, "the request to run")
        task.cancel()
        await wait_until(lambda: engine.state()["running"] == 0, "the cancelled request to leave the batch")
        body = await post_ok(client, "/v1/completions", {"prompt": [1], "max_tokens": 3})
    assert len(body["choices"][0]["token_ids"]) == 3


async def test_a_keep_pause_can_become_an_abort():
    async with serve("sim") as (client, engine):
        gate = Gate(engine, lambda batch: tokens_of(batch, 3))
        task = asyncio.create_task(post_ok(client, "/v1/completions", {"prompt": [2], "max_tokens": 50, **LONG["sim"]}))
        await gate.wait_reached()
        assert (await post_ok(client, "/pause", {"mode": "keep"}))["frozen"] == 1
        gate.open()
        assert (await post_ok(client, "/pause", {"mode": "abort"}))["aborted"] == 1
        choice = (await task)["choices"][0]
    assert (choice["finish_reason"], len(choice["token_ids"])) == ("abort", 3)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_state_and_metrics_answer_on_every_backend(backend):
    async with serve(backend, max_batch=4) as (client, _):
        await post_ok(client, "/v1/completions", {"prompt": [1, 2], "max_tokens": 3, **LONG[backend]})
        await post_ok(client, "/pause", {"mode": "wait"})
        state = (await client.get("/state")).json()
        metrics = await client.get("/metrics")
    assert state["backend"] == backend and state["max_batch"] == 4 and state["pause_mode"] == "wait"
    assert metrics.headers["content-type"].startswith("text/plain")
    assert "rollflow_inference_tokens_generated_total 3.0" in metrics.text
    assert "rollflow_inference_paused 1.0" in metrics.text
