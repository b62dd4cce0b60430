"""Malformed requests get a 4xx that names the field, from every role's endpoints."""
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import BaseModel, Field

from rollflow_engines.errors import NotFoundError, RequestError, install_error_handlers


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
