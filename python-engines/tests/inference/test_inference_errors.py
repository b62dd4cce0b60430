"""Garbage in gets a 4xx naming the field, never a 500, on every backend."""
import json

import pytest

from .helpers import as_export, serve

pytestmark = pytest.mark.anyio
BACKENDS = ["sim", "torch"]

CASES = [
    # (endpoint, body, status, field)
    ("/v1/completions", {}, 400, "prompt"),
    ("/v1/completions", {"prompt": "1 2 3"}, 400, "prompt"),
    ("/v1/completions", {"prompt": []}, 400, "prompt"),
    ("/v1/completions", {"prompt": [1.5]}, 400, "prompt.0"),
    ("/v1/completions", {"prompt": [-1]}, 400, "prompt.0"),
    ("/v1/completions", {"prompt": [True]}, 400, "prompt.0"),
    ("/v1/completions", {"prompt": [10**9]}, 400, "prompt"),
    ("/v1/completions", {"prompt": [1], "max_tokens": 0}, 400, "max_tokens"),
    ("/v1/completions", {"prompt": [1], "max_tokens": "many"}, 400, "max_tokens"),
    ("/v1/completions", {"prompt": [1], "max_tokens": 10**9}, 400, "max_tokens"),
    ("/v1/completions", {"prompt": [1], "temperature": -0.5}, 400, "temperature"),
    ("/v1/completions", {"prompt": [1], "temperature": float("nan")}, 400, "temperature"),
    ("/v1/completions", {"prompt": [1], "temperature": float("inf")}, 400, "temperature"),
    ("/v1/completions", {"prompt": [1], "max_tokens": float("inf")}, 400, "max_tokens"),
    ("/v1/completions", {"prompt": [1, float("nan")]}, 400, "prompt.1"),
    ("/v1/completions", {"prompt": [1], "top_p": 0}, 400, "top_p"),
    ("/v1/completions", {"prompt": [1], "top_p": 1.5}, 400, "top_p"),
    ("/v1/completions", {"prompt": [1], "n": 0}, 400, "n"),
    ("/v1/completions", {"prompt": [1], "n": 10_000}, 400, "n"),
    ("/v1/completions", {"prompt": [1], "seed": "lucky"}, 400, "seed"),
    ("/v1/completions", {"prompt": [1], "stop_token_ids": ["eos"]}, 400, "stop_token_ids.0"),
    ("/v1/completions", {"prompt": [1], "stop_token_ids": [10**9]}, 400, "stop_token_ids"),
    ("/v1/completions", {"prompt": [1], "stream": "yes please"}, 400, "stream"),
    ("/v1/completions", {"prompt": [1], "min_version": -1}, 400, "min_version"),
    ("/v1/completions", {"prompt": [1], "min_version": 1}, 409, "min_version"),  # the server has version 0
    ("/v1/chat/completions", {"messages": []}, 400, "messages"),
    ("/v1/chat/completions", {"messages": "hello"}, 400, "messages"),
    ("/v1/chat/completions", {"messages": [{"role": "user"}]}, 400, "messages.0.content"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 10**9}, 400, "max_tokens"),
    ("/pause", {}, 400, "mode"),
    ("/pause", {"mode": "sleep"}, 400, "mode"),
    ("/pause", {"mode": float("nan")}, 400, "mode"),
    ("/update_weights", {"path": "/tmp", "version": 1}, 409, "state"),  # not paused
    ("/update_weights", {"path": "", "version": 1}, 400, "path"),
    ("/update_weights", {"path": "/tmp", "version": -1}, 400, "version"),
    ("/update_weights", {"path": "/tmp", "version": "next"}, 400, "version"),
    ("/update_weights", {"path": "/tmp", "version": float("-inf")}, 400, "version"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": float("nan")}]}, 400, "messages.0.content"),
]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_bad_requests_name_the_field(backend):
    async with serve(backend) as (client, _):
        for endpoint, body, status, field in CASES:
            r = await client.post(endpoint, content=json.dumps(body), headers={"content-type": "application/json"})
            assert r.status_code == status, (endpoint, body, r.text)
            assert field in [p["field"] for p in r.json()["problems"]], (endpoint, body, r.text)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_malformed_bodies_are_400s(backend):
    async with serve(backend) as (client, _):
        for content in (b"not json", b"[1, 2, 3]", b"", b'{"prompt": [1'):
            r = await client.post("/v1/completions", content=content, headers={"content-type": "application/json"})
            assert r.status_code == 400, (content, r.text)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_update_weights_from_a_missing_path_while_paused_is_a_404(backend, tmp_path):
    async with serve(backend) as (client, _):
        await client.post("/pause", json={"mode": "abort"})
        r = await client.post("/update_weights", json={"path": str(tmp_path / "nope"), "version": 1})
    assert r.status_code == 404 and r.json()["problems"][0]["field"] == "path"


async def test_sim_only_fields_are_refused_by_the_torch_backend():
    async with serve("torch") as (client, _):
        r = await client.post("/v1/completions", json={"prompt": [1], "sim_response_length": 5})
    assert r.status_code == 400 and r.json()["problems"][0]["field"] == "sim_response_length"


async def test_update_weights_on_a_running_server_says_not_paused(tmp_path):
    # The code the bridge retries on (a catch-up resumed the server between a sync's pause and its update).
    async with serve("sim") as (client, _):
        r = await client.post("/update_weights", json={"path": str(as_export(tmp_path / "v1", "sim")), "version": 1})
    assert r.status_code == 409 and r.json()["code"] == "not_paused"
