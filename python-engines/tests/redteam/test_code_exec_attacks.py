"""Red team of code_exec: every attack of code_exec_attacks.py, through verify_code and through a served env
server's /reward, ends with reward 0 (or the honest reward of a correct program), a 200, never a 5xx nor a
verifier error, and leaves no workspace and no process of a sandbox uid behind. More stalling replies than
the server has threads still leave a correct reply its reward 1.

Leftovers are counted under this test's own sandbox_root only (other servers share the machine): a process
of a sandbox uid is ours if its mounts come from that root."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from rollflow_engines.rewards.code_exec import CodeExecConfig, verify_code
from rollflow_engines.rewards.deadline import default_threads
from rollflow_engines.sandbox import SandboxSettings, configure, current
from rollflow_engines.sandbox.uids import processes_by_uid

from .code_exec_attacks import ATTACKS, CALL, STDIO, Attack

HANG_GUARD_S = 300
SERVER_TIMEOUT_S = 60  # the module server's reward_timeout_s: the attacks' default time limit
CORRECT = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
ENGINE_ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}  # as tests/conftest.py's


def leftovers(root: Path) -> tuple[list[str], list[int]]:
    """Workspaces under ``root``, and processes of a sandbox uid whose mounts come from ``root``."""
    workspaces = sorted(str(p) for p in root.glob("*/*"))
    ours = []
    for pids in processes_by_uid().values():
        for pid in pids:
            try:
                if f"/{root.name}/" in Path(f"/proc/{pid}/mountinfo").read_text():
                    ours.append(pid)
            except OSError:
                pass  # it exited while we looked
    return workspaces, ours


def check(attack: Attack, reward: float, info: dict) -> None:
    json.dumps(info, allow_nan=False).encode("utf-8")  # what a reply's info must survive
    failure = info["first_failure"]
    assert reward == attack.reward, (attack.name, info)
    assert bool(info.get("timeout")) is attack.timeout, (attack.name, info)
    if attack.reward == 0.0:
        assert failure is not None, info
    if attack.reason is not None:
        assert attack.reason in failure["reason"], (attack.name, failure)


def unique_root(base: Path) -> Path:
    return base / f"sandboxes-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def sandbox_root(tmp_path):
    before = current()
    root = unique_root(tmp_path)
    configure(SandboxSettings(root=root))
    yield root
    configure(before)


def within_hang_guard(fn, *args):
    """fn(*args) in a thread; a reply that stalls the verifier (a FIFO read) fails here instead of hanging the suite."""
    pool = ThreadPoolExecutor(1)
    try:
        return pool.submit(fn, *args).result(timeout=HANG_GUARD_S)
    finally:
        pool.shutdown(wait=False)  # not a `with`: its exit would wait for the stalled thread


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.name)
def test_attack_through_verify_code(attack, sandbox_root):
    config = CodeExecConfig(**attack.config).model_dump()
    reward, info = within_hang_guard(verify_code, "", attack.program, attack.reference_text, config, attack.time_limit_s)
    check(attack, reward, info)
    assert leftovers(sandbox_root) == ([], [])


@dataclass
class Server:
    base: str
    root: Path
    proc: subprocess.Popen


def start_server(root: Path, port: int, *options: str) -> Server:
    """`python -m rollflow_engines serve --role env`, as tests/conftest.py's serve_engine starts it, ready when /health answers."""
    args = [sys.executable, "-m", "rollflow_engines", "serve", "--role", "env", "--port", str(port),
            "--option", f"sandbox_root={root}", *[x for o in options for x in ("--option", o)]]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENGINE_ENV)
    base, deadline = f"http://127.0.0.1:{port}", time.monotonic() + 60
    while True:
        assert proc.poll() is None, "the env server exited"
        try:
            httpx.get(f"{base}/health", timeout=2)
            return Server(base, root, proc)
        except httpx.TransportError:
            assert time.monotonic() < deadline, f"{base} never answered"
            time.sleep(0.1)  # a readiness poll, not synchronisation of the test's own steps


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One served env server for all the attacks (serve_engine is per test: 40 servers would cost minutes)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    served = start_server(unique_root(tmp_path_factory.mktemp("redteam")), port, f"reward_timeout_s={SERVER_TIMEOUT_S}")
    yield served
    served.proc.terminate()
    assert served.proc.wait(timeout=30) in (0, -signal.SIGTERM)


def post_reward(base: str, response: str, reference: str, config: dict | None = None) -> httpx.Response:
    body = json.dumps({"domain": "code", "response": response, "reference": reference, "config": config or {}})  # ASCII: \u escapes
    return httpx.post(f"{base}/reward", content=body, headers={"content-type": "application/json"}, timeout=SERVER_TIMEOUT_S + 60)


def server_errors(base: str) -> list[str]:
    """The metric lines counting code_exec replies the server failed on: none may be above zero."""
    lines = httpx.get(f"{base}/metrics", timeout=30).text.splitlines()
    return [line for line in lines if line.startswith(("rollflow_env_reward_errors_total{", "rollflow_env_reward_infra_errors_total{"))
            and 'verifier="code_exec"' in line and not line.endswith(" 0.0")]


@pytest.mark.parametrize("attack", [a for a in ATTACKS if a.time_limit_s == SERVER_TIMEOUT_S], ids=lambda a: a.name)
def test_attack_through_the_served_reward_api(attack, server):
    r = post_reward(server.base, attack.program, attack.reference_text, attack.config)
    assert r.status_code == 200, r.text
    check(attack, r.json()["reward"], r.json()["info"])
    assert leftovers(server.root) == ([], [])
    assert server_errors(server.base) == []


def test_stalling_replies_beyond_the_thread_count_leave_a_correct_reply_its_reward(serve_engine, tmp_path):
    """fifo_result_file, fifo_blocks_the_harness and sleep_past_deadline, each more times than the server has
    threads for sandboxed verifiers, all at once; then a correct reply from the same server scores 1."""
    root = unique_root(tmp_path)
    served = serve_engine("--role", "env", "--option", f"sandbox_root={root}", "--option", "reward_timeout_s=3")
    n = default_threads() + 2
    by_name = {a.name: a for a in ATTACKS}
    stalls = [by_name["fifo_result_file"], by_name["fifo_blocks_the_harness"], by_name["sleep_past_deadline"]]
    sent = [a for a in stalls for _ in range(n)]
    no_wall_clock = {"limits": {"wall_s": 600}}  # only the reward deadline ends them
    with ThreadPoolExecutor(len(sent)) as pool:
        answers = list(pool.map(lambda a: post_reward(served.base, a.program, a.reference_text, no_wall_clock), sent))
    for attack, r in zip(sent, answers):
        assert r.status_code == 200, (attack.name, r.text)
        assert r.json()["reward"] == 0.0, (attack.name, r.json())
        if attack.name != "fifo_result_file":
            assert r.json()["info"]["timeout"] is True, (attack.name, r.json())
    r = post_reward(served.base, CORRECT, json.dumps(STDIO))
    assert r.status_code == 200 and r.json()["reward"] == 1.0, r.text
    r = post_reward(served.base, "def solve(a, b):\n    return a + b\n", json.dumps(CALL))
    assert r.status_code == 200 and r.json()["reward"] == 1.0, r.text
    assert server_errors(served.base) == []
    assert leftovers(root) == ([], [])
