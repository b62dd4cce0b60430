"""Streamed generations (stream: true, server-sent events) and min_version.

A stream carries the same tokens, logprobs and version spans as the plain
answer, in pieces that leave the server while the generation runs, so a
caller cut off by a crash keeps what it already received. A request that asks
for newer weights than the server has loaded is refused with a 409 naming the
version loaded (code version_behind), never served on the older weights."""
import asyncio
import json

import pytest


from .helpers import LONG, Gate, as_export, serve, tokens_of, wait_until

pytestmark = pytest.mark.anyio
BACKENDS = ["sim", "torch"]


def events(body: str) -> list[dict]:
    """The data of each server-sent event, up to [DONE] (which must come last)."""
    data = [line[len("data: "):] for line in body.split("\n") if line.startswith("data: ")]
    assert data[-1] == "[DONE]", body[-300:]
    return [json.loads(d) for d in data[:-1]]


def joined(chunks: list[dict], n: int) -> list[dict]:
    """Each choice's deltas put back together: tokens, logprobs, spans (merged) and the finish reason."""
    out = [{"token_ids": [], "logprobs": [], "version_spans": [], "finish_reason": None} for _ in range(n)]
    for chunk in chunks:
        for c in chunk["choices"]:
            o = out[c["index"]]
            assert o["finish_reason"] is None, "a delta after the choice finished"
            assert len(c["token_ids"]) == len(c["logprobs"])
            for s in c["version_spans"]:
                last = o["version_spans"][-1] if o["version_spans"] else None
                assert s["start"] >= len(o["token_ids"]) and s["end"] <= len(o["token_ids"]) + len(c["token_ids"])
                if last and last["version"] == s["version"] and last["end"] == s["start"]:
                    last["end"] = s["end"]
                else:
                    o["version_spans"].append(dict(s))
            o["token_ids"] += c["token_ids"]
            o["logprobs"] += c["logprobs"]
            o["finish_reason"] = c["finish_reason"]
    return out


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_stream_carries_what_the_plain_answer_does(backend):
    request = {"prompt": [5, 6, 7], "max_tokens": 12, "seed": 4, "n": 2, **LONG[backend]}
    async with serve(backend) as (client, _):
        plain = (await client.post("/v1/completions", json=request)).json()
        r = await client.post("/v1/completions", json={**request, "stream": True})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    chunks = events(r.text)
    assert {c["object"] for c in chunks} == {"text_completion.chunk"}
    expected = [{k: c[k] for k in ("token_ids", "logprobs", "version_spans", "finish_reason")} for c in plain["choices"]]
    assert joined(chunks, 2) == expected
    if backend == "torch":  # the text deltas add up to the decoded completion
        for i, choice in enumerate(plain["choices"]):
            assert "".join(c["text"] for ch in chunks for c in ch["choices"] if c["index"] == i) == choice["text"]


async def test_a_chat_stream_sends_the_prompt_first_then_the_tokens():
    request = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8, "seed": 2}
    async with serve("sim") as (client, _):
        plain = (await client.post("/v1/chat/completions", json=request)).json()
        chunks = events((await client.post("/v1/chat/completions", json={**request, "stream": True})).text)
    assert chunks[0]["prompt_token_ids"] == plain["prompt_token_ids"] and chunks[0]["choices"] == []
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert joined(chunks[1:], 1)[0]["token_ids"] == plain["choices"][0]["token_ids"]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_tokens_leave_the_engine_before_the_generation_ends(backend):
    async with serve(backend) as (_, engine):
        from rollflow_engines.roles.inference.engine import SamplingParams

        gate = Gate(engine, lambda batch: tokens_of(batch, 5))
        params = SamplingParams(max_tokens=40, seed=1, ignore_eos=True,
                                sim_response_length=10_000 if backend == "sim" else None, temperature=0)
        stream = engine.generate_stream([3, 4, 5], params, 1)
        received: list[int] = []
        while len(received) < 5:  # the scheduler is held at 5 tokens: these arrive mid-generation
            for d in await asyncio.wait_for(anext(stream), 60):
                assert d.finish_reason is None
                received += d.token_ids
        assert engine.state()["running"] == 1
        await stream.aclose()  # the caller goes away: its sequence leaves the batch
        gate.open()
        await wait_until(lambda: engine.state()["running"] == 0, "the cancelled sequence to be dropped")


async def test_an_abort_ends_the_stream_with_the_partial_tokens():
    async with serve("sim") as (client, engine):
        gate = Gate(engine, lambda batch: tokens_of(batch, 6))
        task = asyncio.create_task(client.post("/v1/completions", json={"prompt": [1, 2], "max_tokens": 50, "stream": True, **LONG["sim"]}))
        await gate.wait_reached()
        assert (await client.post("/pause", json={"mode": "abort"})).json()["aborted"] == 1
        gate.open()
        result = joined(events((await task).text), 1)[0]
        await client.post("/resume")
    assert result["finish_reason"] == "abort" and len(result["token_ids"]) == 6
    assert result["version_spans"] == [{"version": 0, "start": 0, "end": 6}]


@pytest.mark.parametrize("stream", [False, True])
async def test_min_version_is_refused_by_a_server_behind_and_served_once_it_caught_up(stream, tmp_path):
    weights = as_export(tmp_path / "v2", "sim")
    request = {"prompt": [1, 2], "max_tokens": 3, "min_version": 2, "stream": stream}
    async with serve("sim") as (client, _):
        refused = await client.post("/v1/completions", json=request)
        chat = await client.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "x"}], "min_version": 2, "stream": stream})
        for r in (refused, chat):
            assert r.status_code == 409, r.text
            body = r.json()
            assert (body["code"], body["version"], body["min_version"]) == ("version_behind", 0, 2)
            assert body["problems"][0]["field"] == "min_version"
        await client.post("/pause", json={"mode": "wait"})
        await client.post("/update_weights", json={"path": str(weights), "version": 2})
        await client.post("/resume")
        served = await client.post("/v1/completions", json=request)
        newer_ok = await client.post("/v1/completions", json={**request, "min_version": 1})
    assert served.status_code == 200 and newer_ok.status_code == 200
    spans = joined(events(served.text), 1)[0]["version_spans"] if stream else served.json()["choices"][0]["version_spans"]
    assert {s["version"] for s in spans} == {2}


async def test_a_waiting_stream_sends_keep_alives_and_a_client_gone_mid_wait_stops_the_generation(monkeypatch):
    """While no chunk comes the stream sends comments (the bridge takes a minute of silence for a hung
    server); the chunks in between are untouched, and closing the stream cancels the chunk it waits for."""
    from pydantic import BaseModel

    from rollflow_engines.roles.inference import api

    class Chunk(BaseModel):
        n: int

    monkeypatch.setattr(api, "SSE_KEEPALIVE_S", 0.01)
    gate, stopped = asyncio.Event(), asyncio.Event()

    async def chunks():
        try:
            yield Chunk(n=1)
            await gate.wait()
            yield Chunk(n=2)
            await asyncio.Event().wait()  # never comes: the client leaves first
        finally:
            stopped.set()

    sent: list[bytes] = []
    stream = api._sse(chunks(), lambda: False)
    async for piece in stream:
        sent.append(piece)
        if sent.count(api.KEEPALIVE) == 2:
            gate.set()
        if len(sent) >= 2 and sent[-2:] == [api.KEEPALIVE, api.KEEPALIVE] and b'"n":2' in b"".join(sent):
            break
    await stream.aclose()
    # Nothing came while the generation waited but keep-alives; the chunks passed through whole, in order.
    assert sent[:3] == [b'data: {"n":1}\n\n', api.KEEPALIVE, api.KEEPALIVE]
    assert [p for p in sent if p != api.KEEPALIVE] == [b'data: {"n":1}\n\n', b'data: {"n":2}\n\n']
    await asyncio.wait_for(stopped.wait(), timeout=60)
