"""code_exec: model-written programs against tests in the sandbox, directly and through /reward."""
import json
import socket
from dataclasses import dataclass, field

import pytest
from fastapi.testclient import TestClient

from rollflow_engines.app import create_app
from rollflow_engines.config import ServeConfig
from rollflow_engines.errors import RequestError
from rollflow_engines.rewards import get_verifier
from rollflow_engines.rewards.code_exec import CODE_LIMITS, CodeExecConfig, extract_code, verify_code
from rollflow_engines.sandbox import SandboxSettings, configure, current
from rollflow_engines.sandbox import check as sandbox_check
from rollflow_engines.sandbox.uids import processes_by_uid

ADD_STDIO = json.dumps({"style": "stdio", "tests": [{"input": "1 2\n", "output": "3\n"}, {"input": "40 2\n", "output": "42"},
                                                    {"input": "-5 5\n", "output": "0\n"}]})
ADD_CALL = json.dumps({"style": "call", "fn_name": "add", "tests": [{"args": [1, 2], "expected": 3}, {"args": [0.1, 0.2], "expected": 0.3},
                                                                   {"args": [[1], [2]], "expected": [1, 2]}]})
STDIO_ADD = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
FAST = {"limits": {"cpu_s": 1, "wall_s": 5}}


@dataclass(frozen=True)
class RecordingSettings(SandboxSettings):
    """Remembers the workspaces the verifier opened, so a test can check they and their processes are gone."""
    opened: list = field(default_factory=list)

    def open(self, files=None):
        ws = super().open(files)
        self.opened.append(ws)
        return ws


@pytest.fixture(autouse=True)
def sandbox(tmp_path):
    before = current()
    settings = RecordingSettings(root=tmp_path / "sandboxes")
    configure(settings)
    yield settings
    configure(before)
    for ws in settings.opened:
        assert not ws.record.exists() and processes_by_uid().get(ws.uid) is None, ws


def score(response: str, reference: str, time_limit_s: float = 60, **config) -> tuple[float, dict]:
    return verify_code("", response, reference, CodeExecConfig(**config).model_dump(), time_limit_s)


def test_registered_sandboxed_and_mapped_to_the_code_domain():
    v = get_verifier("code_exec")
    assert v.sandboxed and not v.isolated
    with TestClient(create_app(ServeConfig(role="env"))) as client:
        r = client.post("/reward", json={"domain": "code", "response": STDIO_ADD, "reference": ADD_STDIO})
    assert r.status_code == 200 and r.json()["reward"] == 1.0 and r.json()["info"]["verifier"] == "code_exec"


def test_a_correct_program_in_both_styles():
    assert score(STDIO_ADD, ADD_STDIO) == (1.0, {"passed": 3, "total": 3, "ran": 3, "timeouts": 0, "extracted": "block", "first_failure": None})
    reward, info = score("def add(a, b):\n    return a + b\n", ADD_CALL)
    assert reward == 1.0 and info["extracted"] == "whole_text"
    leetcode = "Some words.\n```python\nclass Solution:\n    def add(self, a, b):\n        return a + b\n```\n"
    assert score(leetcode, ADD_CALL)[0] == 1.0


def test_wrong_answers_score_zero_or_the_fraction():
    wrong = "```python\na, b = map(int, input().split())\nprint(a + b if a > 0 else 7)\n```"
    reward, info = score(wrong, ADD_STDIO)
    assert reward == 0.0 and info["passed"] == 2 and info["ran"] == 3  # test 2 of 3 fails; mode all stops there
    assert info["first_failure"]["test"] == 2 and info["first_failure"]["reason"] == "wrong answer" and info["first_failure"]["excerpt"] == "7"
    assert score(wrong, ADD_STDIO, mode="fraction")[0] == pytest.approx(2 / 3)
    reward, info = score("def add(a, b):\n    return (a, b)\n", ADD_CALL)
    assert reward == 0.0 and info["first_failure"]["reason"].startswith("wrong answer: returned [1, 2]")
    assert info["ran"] == 1  # mode all stops at the first failure


def test_a_crash_scores_zero_with_the_traceback_excerpt():
    reward, info = score("raise ValueError('boom')", ADD_STDIO)
    assert reward == 0.0 and info["first_failure"]["reason"] == "crashed"
    assert info["first_failure"]["excerpt"].endswith("ValueError: boom")
    reward, info = score("def sub(a, b):\n    return a - b\n", ADD_CALL)
    assert reward == 0.0 and "defines no function 'add'" in info["first_failure"]["excerpt"]


def test_a_looping_program_is_stopped_and_counted_as_a_timeout():
    reward, info = score("while True:\n    pass\n", ADD_STDIO, mode="fraction", **FAST)
    assert reward == 0.0 and info["timeouts"] == 3 and info["first_failure"]["reason"] == "timed out"
    reward, info = score("import time\ndef add(a, b):\n    time.sleep(1000)\n", ADD_CALL, limits={"wall_s": 0.5})
    assert reward == 0.0 and info["timeouts"] == 1 and info["first_failure"]["reason"] == "timed out"


def test_the_time_limit_bounds_the_whole_verification():
    reward, info = score(STDIO_ADD, ADD_STDIO, time_limit_s=0)
    assert reward == 0.0 and info["ran"] == 0 and info["timeout"] is True and "3 test(s) not run" in info["error"]


def test_a_fork_bomb_is_contained():
    bomb = "import os\nwhile True:\n    os.fork()\n"
    reward, info = score(bomb, ADD_STDIO, **FAST)
    assert reward == 0.0 and info["first_failure"]["reason"] in ("crashed", "timed out")
    assert score(STDIO_ADD, ADD_STDIO)[0] == 1.0  # the server is unaffected


def test_a_program_trying_the_network_gets_nothing():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.setblocking(False)
        port = server.getsockname()[1]
        program = ("import socket\ntry:\n    socket.create_connection(('127.0.0.1', %d), timeout=2)\n    print('connected')\n"
                   "except OSError:\n    print('refused')\n" % port)
        reference = json.dumps({"style": "stdio", "tests": [{"input": "", "output": "connected"}]})
        reward, info = score(program, reference)
        with pytest.raises(BlockingIOError):
            server.accept()  # nothing ever reached the host's loopback
    assert reward == 0.0 and info["first_failure"]["excerpt"] == "refused"


@pytest.mark.parametrize("reference, says", [
    ("not json", "not a code_exec reference"),
    (json.dumps({"style": "stdio", "tests": []}), "tests: List should have at least 1 item"),
    (json.dumps({"style": "shell", "tests": [{}]}), "style: Input should be 'stdio' or 'call'"),
    (json.dumps({"style": "call", "tests": [{"args": [], "expected": 1}]}), "fn_name: a Python identifier is required"),
    (json.dumps({"style": "stdio", "tests": [{"input": "1"}]}), "tests[0]: expected input and output"),
    (json.dumps({"style": "call", "fn_name": "f", "tests": [{"args": 3, "expected": 1}]}), "tests[0]: expected args (a list) and expected"),
])
def test_a_malformed_reference_is_a_clear_400(reference, says):
    with pytest.raises(RequestError) as e:
        score(STDIO_ADD, reference)
    assert e.value.field == "reference" and says in e.value.message
    with TestClient(create_app(ServeConfig(role="env"))) as client:
        r = client.post("/reward", json={"domain": "code", "response": STDIO_ADD, "reference": reference})
    assert r.status_code == 400 and r.json()["problems"][0]["field"] == "reference" and says in r.json()["error"]


def test_limits_given_are_merged_over_the_code_defaults():
    limits = CodeExecConfig.model_validate({"limits": {"wall_s": 2}}).limits
    assert limits.wall_s == 2 and limits.memory_mb == CODE_LIMITS["memory_mb"] and limits.cpu_s == CODE_LIMITS["cpu_s"]
    with TestClient(create_app(ServeConfig(role="env"))) as client:
        r = client.post("/reward", json={"domain": "code", "response": STDIO_ADD, "reference": ADD_STDIO,
                                         "config": {"mode": "some", "limits": {"wall_s": -1}}})
    assert r.status_code == 400 and {p["field"] for p in r.json()["problems"]} == {"config.mode", "config.limits.wall_s"}


def test_extraction_takes_the_last_python_block():
    assert extract_code("```python\nprint(1)\n```\nthen\n```py\nprint(2)\n```") == ("print(2)\n", "block")
    assert extract_code("```\nprint(3)\n```") == ("```\nprint(3)\n```", "whole_text")


def test_a_sandbox_failure_is_a_503_never_a_score(tmp_path, monkeypatch):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    with TestClient(create_app(ServeConfig(role="env", options={"sandbox_root": str(not_a_dir / "root")}))) as client:
        r = client.post("/reward", json={"domain": "code", "response": STDIO_ADD, "reference": ADD_STDIO})
        assert r.status_code == 503 and r.json()["code"] == "sandbox_failed" and "could not create a workspace" in r.json()["error"]
        monkeypatch.setattr(sandbox_check, "_checked", set())
        monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap to be found: SandboxUnavailable
        r = client.post("/reward", json={"domain": "code", "response": STDIO_ADD, "reference": ADD_STDIO})
        assert r.status_code == 503 and "install the Debian package bubblewrap" in r.json()["error"]
        monkeypatch.undo()
        metrics = client.get("/metrics").text
    assert 'rollflow_env_reward_infra_errors_total{domain="code",verifier="code_exec"} 2.0' in metrics
    assert 'rollflow_env_rewards_total{domain="code"' not in metrics
