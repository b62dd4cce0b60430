"""Properties of /reward for every registered verifier, on any text a model could write (NULs, lone surrogates,
control characters, fences, code that misbehaves): the answer is a 200 with a finite reward in [0, 1], or a
400 naming a request field (a lone surrogate in a text field is refused at the edge, edge.py; a reference the
verifier cannot read names ``reference``: the reference is the dataset's). code_exec never counts a reply as a
verifier error or the infrastructure's. The server still scores a correct reply afterwards.

In-process (TestClient) for speed, plus a few examples through a served process. No verifier is skipped:
llm_judge's judge is a small HTTP server in the test that always grades 7 of 10."""
import json
import math

import httpx
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings, strategies as st

from rollflow_engines.app import create_app
from rollflow_engines.config import ServeConfig
from rollflow_engines.rewards import known_verifiers

from .judge_server import ScriptedJudge

FEW = settings(max_examples=25, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
STDIO = json.dumps({"style": "stdio", "tests": [{"input": "2 3\n", "output": "5\n"}, {"input": "\x00\n", "output": ""}]})
CALL = json.dumps({"style": "call", "fn_name": "solve", "tests": [{"args": [2, 3], "expected": 5}, {"args": [[], {}], "expected": None}]})
CORRECT = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
ADD = json.dumps({"style": "stdio", "tests": [{"input": "2 3\n", "output": "5\n"}]})

pieces = st.one_of(
    st.text(st.characters(exclude_categories=()), max_size=40),  # any code point, lone surrogates included
    st.text(st.sampled_from("\x00\x01\x07\x1b\x7f\u200b\ufeff\u2028\ud800\udfff\U0010ffff{}`\\$"), max_size=20),
    st.sampled_from(["```python\n", "```py\n", "```\n", "\n", "\\boxed{", "}", "print(5)\n", "import os\nos._exit(0)\n",
                     "def solve(a, b):\n    return a + b\n", "import os\nos.mkfifo('result-0.json')\nos._exit(0)\n",
                     "print('x' * 10**6)\n", "import sys\nsys.stdout.close()\n", "raise SystemExit(0)\n", "\\frac{1}{0}",
                     "open('result-0.json', 'w').write('[' * 10**5)\n", "{response}", "%s%n", "\r\n", "  "]),
)
responses = st.lists(pieces, max_size=8).map("".join)
json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=10)
references = st.one_of(
    st.text(max_size=30),
    st.lists(st.fixed_dictionaries({"input": st.text(max_size=20), "output": st.text(max_size=20)}), max_size=2)
      .map(lambda tests: json.dumps({"style": "stdio", "tests": tests})),
    st.tuples(st.one_of(st.just("solve"), st.text(max_size=8)),
              st.lists(st.fixed_dictionaries({"args": st.lists(json_values, max_size=2), "expected": json_values}), max_size=2))
      .map(lambda ft: json.dumps({"style": "call", "fn_name": ft[0], "tests": ft[1]})),
    st.sampled_from([json.dumps({"style": "call", "fn_name": "solve", "tests": [{"args": [], "expected": "[" * 300 + "]" * 300}]}),
                     '{"style": "call", "fn_name": "solve", "tests": [{"args": [], "expected": ' + "[" * 300 + "]" * 300 + "}]}",
                     '{"style": "call", "fn_name": "solve", "tests": [{"args": [NaN], "expected": Infinity}]}']),
)


@pytest.fixture(scope="module")
def judge():
    j = ScriptedJudge(["7"])  # every request answered with the grade 7
    yield j
    j.close()


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    app = create_app(ServeConfig(role="env", options={"sandbox_root": str(tmp_path_factory.mktemp("props") / "sandboxes")}))
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


def post(client, **body):
    """The body as JSON text with \\u escapes, as a client in another language sends a lone surrogate."""
    return client.post("/reward", content=json.dumps(body), headers={"content-type": "application/json"})


def assert_scored_or_refused(r, refusable=("reference",)):
    if r.status_code == 400:
        for p in r.json()["problems"]:
            assert p["field"] in refusable or (p["field"] in ("response", "prompt") and "surrogate" in p["message"]), r.text
        return None
    assert r.status_code == 200, r.text
    reward = r.json()["reward"]
    assert isinstance(reward, float) and math.isfinite(reward) and 0.0 <= reward <= 1.0, r.text
    return r.json()["info"]


def server_errors(client, verifier):
    return [line for line in client.get("/metrics").text.splitlines()
            if line.startswith(("rollflow_env_reward_errors_total{", "rollflow_env_reward_infra_errors_total{"))
            and f'verifier="{verifier}"' in line and not line.endswith(" 0.0")]


def test_every_registered_verifier_is_covered_here():
    assert set(known_verifiers()) == {"code_exec", "exact_match", "llm_judge", "math_verify"}


def test_code_exec_scores_any_response(client):
    @FEW
    @given(response=responses, reference=st.sampled_from([STDIO, CALL]))
    def prop(response, reference):
        info = assert_scored_or_refused(post(client, domain="code", response=response, reference=reference), refusable=())
        if info is not None:
            assert "error" not in info or info["timeout"], info  # a reply is scored, never a verifier failure

    prop()
    assert server_errors(client, "code_exec") == []
    assert post(client, domain="code", response=CORRECT, reference=ADD).json()["reward"] == 1.0


def test_code_exec_with_odd_references_is_scored_or_names_the_reference(client):
    @FEW
    @given(response=responses, reference=references)
    def prop(response, reference):
        assert_scored_or_refused(post(client, domain="code", response=response, reference=reference))

    prop()
    assert server_errors(client, "code_exec") == []


@pytest.mark.parametrize("domain", ["exact", "math"])
def test_exact_match_and_math_verify_score_any_response(client, domain):
    @FEW
    @given(response=responses, reference=st.one_of(st.text(max_size=20), st.sampled_from(["5", "\\frac{1}{2}", "x^2"])),
           prompt=st.text(st.characters(exclude_categories=()), max_size=20))
    def prop(response, reference, prompt):
        assert_scored_or_refused(post(client, domain=domain, prompt=prompt, response=response, reference=reference),
                                 refusable=("reference",))

    prop()
    assert post(client, domain=domain, response="5", reference="5").json()["reward"] == 1.0


def test_llm_judge_grades_any_response(client, judge):
    config = {"url": judge.url, "template": "Question: {prompt}\nReply: {response}\nReference: {reference}\nGrade 0-10:"}

    @FEW
    @given(response=responses, reference=st.text(max_size=20))
    def prop(response, reference):
        info = assert_scored_or_refused(post(client, domain="judged", verifier="llm_judge", response=response, reference=reference,
                                             config=config))
        if info is not None:
            assert info["grade"] == 7.0

    prop()


def test_any_response_through_a_served_server(serve_engine, tmp_path):
    served = serve_engine("--role", "env", "--option", f"sandbox_root={tmp_path / 'sandboxes'}")
    http = httpx.Client(base_url=served.base, timeout=120)

    @settings(max_examples=8, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
    @given(response=responses, domain=st.sampled_from(["code", "exact"]))
    def prop(response, domain):
        reference = STDIO if domain == "code" else "5"
        assert_scored_or_refused(post(http, domain=domain, response=response, reference=reference), refusable=())

    with http:
        prop()
        assert server_errors(http, "code_exec") == []
        assert post(http, domain="code", response=CORRECT, reference=ADD).json()["reward"] == 1.0
