"""Malformed requests get a 4xx that names the field, from every role's endpoints."""
import asyncio
import json

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import BaseModel, Field

from rollflow_engines.app import create_app
from rollflow_engines.config import ConfigError, ServeConfig, load_config, validate_role_options
from rollflow_engines.edge import MiB, RequestEdge
from rollflow_engines.errors import GIVEN_MAX_CHARS, NotFoundError, RequestError, excerpt, install_error_handlers


class Body(BaseModel):
    max_tokens: int = Field(ge=1)
    prompt: list[int]


def make_client() -> TestClient:
    app = FastAPI()
    install_error_handlers(app)

    @app.post("/echo")
    def echo(body: Body) -> dict:
        if not body.prompt:
            raise RequestError("prompt", "must not be empty", body.prompt)
        return {"ok": True}

    @app.post("/session/{sid}")
    def session(sid: str) -> dict:
        raise NotFoundError("session", "unknown session", sid)

    return TestClient(app)


def test_schema_violations_are_400_naming_each_field():
    r = make_client().post("/echo", json={"max_tokens": "many", "prompt": "abc"})
    assert r.status_code == 400
    fields = {p["field"]: p for p in r.json()["problems"]}
    assert set(fields) == {"max_tokens", "prompt"}
    assert fields["max_tokens"]["given"] == "many"


def test_handler_errors_name_the_field_and_status():
    client = make_client()
    r = client.post("/echo", json={"max_tokens": 4, "prompt": []})
    assert (r.status_code, r.json()["problems"][0]["field"]) == (400, "prompt")
    r = client.post("/session/abc")
    assert r.status_code == 404 and r.json()["error"] == "session: unknown session"


def test_non_json_body_is_400_not_500():
    r = make_client().post("/echo", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 400


def test_nan_and_infinity_in_bad_input_are_echoed_not_a_500():
    # JSON has no NaN: Python's json accepts the literal, and the 400 must still serialise.
    r = make_client().post("/echo", content=b'{"max_tokens": NaN, "prompt": [Infinity]}', headers={"content-type": "application/json"})
    assert r.status_code == 400
    given = {p["field"]: p["given"] for p in r.json()["problems"]}
    assert given["max_tokens"] == "nan" and given["prompt.0"] == "inf"


# ---- bounded echoes

def test_a_huge_given_is_echoed_as_a_bounded_excerpt_with_its_length():
    huge = "x" * (5 * 1024 * 1024)
    r = make_client().post("/echo", json={"max_tokens": huge, "prompt": list(range(100_000))})
    assert r.status_code == 400
    given = {p["field"]: p["given"] for p in r.json()["problems"]}
    assert given["max_tokens"] == "x" * GIVEN_MAX_CHARS + f"… [cut: {len(huge)} characters in all]"
    assert len(r.content) < 2_000


def test_excerpt_keeps_short_values_whole_and_cuts_long_ones_at_every_kind():
    assert excerpt({"a": [1, 2], "b": "short"}) == {"a": [1, 2], "b": "short"}
    assert excerpt(float("nan")) == "nan"
    cut_list = excerpt(list(range(1_000_000)))
    assert cut_list.startswith("[0, 1, 2, ") and cut_list.endswith("… [cut: 1000000 items in all]")
    cut_dict = excerpt({f"k{i}": i for i in range(5000)})
    assert cut_dict.startswith('{"k0": 0, ') and cut_dict.endswith("… [cut: 5000 keys in all]")
    assert excerpt(b"\xff" * 10_000).endswith(" characters in all]")
    for value in (cut_list, cut_dict):
        assert len(value) <= GIVEN_MAX_CHARS + 40


# ---- one error shape for every refusal, on every role's real app

ROLE_APPS = [("inference", "sim", "/v1/completions"), ("trainer", "sim", "/train_step"), ("env", "python", "/step")]
LIMIT = 4096


@pytest.fixture(scope="module", params=ROLE_APPS, ids=[r for r, _, _ in ROLE_APPS])
def role_client(request):
    role, backend, endpoint = request.param
    config = ServeConfig(role=role, backend=backend, options={"max_request_bytes": LIMIT})
    with TestClient(create_app(config), raise_server_exceptions=False) as client:
        yield client, endpoint


def assert_error_shape(r, status: int, field: str) -> dict:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error", "problems"}, body
    assert all(set(p) == {"field", "message", "given"} for p in body["problems"]), body
    assert field in [p["field"] for p in body["problems"]], body
    assert body["error"].startswith(f"{body['problems'][0]['field']}: ")
    return body["problems"][0]


JSON = {"content-type": "application/json"}


def test_routing_refusals_have_the_shared_shape(role_client):
    client, endpoint = role_client
    assert assert_error_shape(client.post("/no/such/endpoint", json={}), 404, "(path)")["given"] == "/no/such/endpoint"
    p = assert_error_shape(client.get(endpoint), 405, "(method)")
    assert p["given"] == "GET" and "allowed: POST" in p["message"]


def test_broken_json_and_non_utf8_bodies_have_the_shared_shape(role_client):
    client, endpoint = role_client
    p = assert_error_shape(client.post(endpoint, content=b'{"step": [1', headers=JSON), 400, "(body)")
    assert p["message"].startswith("not valid JSON: ") and "at character 11" in p["message"]
    p = assert_error_shape(client.post(endpoint, content=b'{"action": "caf\xe9"}', headers=JSON), 400, "(body)")
    assert p["message"] == "not UTF-8: byte 0xe9 at offset 15 (invalid continuation byte)"
    # Latin-1 sent without a content type is no different.
    assert_error_shape(client.post(endpoint, content=b"\xff\xfe{}"), 400, "(body)")


def test_a_lone_surrogate_escape_is_refused_naming_its_field(role_client):
    client, endpoint = role_client
    body = b'{"session": "s", "action": ["ok", {"text": "\\ud800 alone"}]}'
    p = assert_error_shape(client.post(endpoint, content=body, headers=JSON), 400, "action.1.text")
    assert p["given"] == "\\ud800 alone"
    assert_error_shape(client.post(endpoint, content=b'{"\\udc00": 1}', headers=JSON), 400, "(body)")
    # A surrogate pair is one character (here U+1F600), not a refusal.
    r = client.post(endpoint, content=b'{"session": "\\ud83d\\ude00"}', headers=JSON)
    assert r.status_code != 400 or "surrogate" not in r.text


def test_a_body_over_max_request_bytes_is_413_with_the_shared_shape(role_client):
    client, endpoint = role_client
    p = assert_error_shape(client.post(endpoint, content=b" " * (LIMIT + 1), headers=JSON), 413, "(body)")
    assert p["given"] == LIMIT + 1 and f"at most {LIMIT} (max_request_bytes)" in p["message"]
    # At the limit exactly, the body reaches the endpoint (which finds it empty of fields).
    r = client.post(endpoint, content=b"{}" + b" " * (LIMIT - 2), headers=JSON)
    assert r.status_code == 400 and "(body)" not in [q["field"] for q in r.json()["problems"]]


# ---- the limit is enforced before the body is read

def run_asgi(app, headers: list[tuple[bytes, bytes]], chunks: list[bytes]) -> tuple[int, dict, int]:
    """Sends one POST straight to the ASGI app; returns (status, body, chunks the app pulled)."""
    pulled = 0
    sent: list[dict] = []

    async def receive():
        nonlocal pulled
        if pulled < len(chunks):
            pulled += 1
            return {"type": "http.request", "body": chunks[pulled - 1], "more_body": pulled < len(chunks)}
        return {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/v1/completions", "raw_path": b"/v1/completions",
             "query_string": b"", "headers": headers, "http_version": "1.1", "scheme": "http",
             "server": ("test", 80), "client": ("test", 1), "root_path": ""}
    asyncio.run(app(scope, receive, send))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, json.loads(body), pulled


def test_a_declared_content_length_over_the_limit_is_refused_before_reading_a_byte():
    app = RequestEdge(make_client().app, max_request_bytes=LIMIT)
    status, body, pulled = run_asgi(app, [(b"content-length", b"52428800")], [b"x" * 1024] * 10)
    assert (status, pulled) == (413, 0)
    assert body["problems"][0]["given"] == 52428800


def test_a_chunked_body_is_refused_once_it_passes_the_limit_not_read_to_its_end():
    app = RequestEdge(make_client().app, max_request_bytes=LIMIT)
    status, body, pulled = run_asgi(app, [(b"transfer-encoding", b"chunked")], [b"x" * 1024] * 1000)
    assert (status, pulled) == (413, 5)  # 5 KiB pulled, 4 KiB allowed; the other 995 chunks never read
    assert body["problems"][0]["given"] == 5 * 1024


def test_max_request_bytes_is_validated_per_role():
    for role in ("inference", "trainer", "env"):
        with pytest.raises(ConfigError, match=r"options\.max_request_bytes: .*greater than or equal to 1024.*given: 10"):
            load_config(None, {"role": role}, ["max_request_bytes=10"])


def test_the_default_limits_suit_each_role():
    limits = {role: validate_role_options(ServeConfig(role=role)).max_request_bytes for role in ("inference", "trainer", "env")}
    assert limits == {"inference": 16 * MiB, "trainer": 256 * MiB, "env": 8 * MiB}


def test_a_real_server_refuses_a_50_mb_prompt_and_a_chunked_flood_then_keeps_serving(serve_engine):
    served = serve_engine("--role", "inference", "--option", f"max_request_bytes={MiB}")
    big = b'{"prompt": [' + b"1, " * (17 * MiB) + b"1]}"
    r = httpx.post(f"{served.base}/v1/completions", content=big, headers=JSON, timeout=60)
    assert_error_shape(r, 413, "(body)")

    def flood():
        for _ in range(64):
            yield b" " * (64 * 1024)

    r = httpx.post(f"{served.base}/v1/completions", content=flood(), headers=JSON, timeout=60)
    p = assert_error_shape(r, 413, "(body)")
    assert MiB < p["given"] < 64 * 64 * 1024  # counted past the limit, refused before the flood's end
    assert httpx.post(f"{served.base}/v1/completions", json={"prompt": [1], "max_tokens": 2}, timeout=60).status_code == 200
