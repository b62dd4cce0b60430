import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from rollflow_engines import objects

# Child processes find the package the way rollflow's own launcher does.
ENGINE_ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
SERVE = [sys.executable, "-m", "rollflow_engines", "serve"]
REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def engine_env() -> dict[str, str]:
    """The environment of a child process that imports rollflow_engines."""
    return ENGINE_ENV


@pytest.fixture
def free_port() -> int:
    return _free_port()


@pytest.fixture
def serve_cli():
    """Runs `python -m rollflow_engines serve ARGS` to completion (for start-up errors, which must exit before serving)."""
    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*SERVE, *args], capture_output=True, text=True, timeout=120, env=ENGINE_ENV)
    return run


@dataclass
class Served:
    base: str
    health: dict
    proc: subprocess.Popen


@pytest.fixture
def serve_engine(free_port):
    """Starts `python -m rollflow_engines serve ARGS --port <free port>` as a real process and waits until
    /health answers (a readiness poll with a deadline, not a timing assertion). On teardown it sends SIGTERM
    and checks a clean exit: uvicorn shuts down gracefully, then re-raises the signal it caught."""
    started: list[subprocess.Popen] = []

    def start(*args: str) -> Served:
        proc = subprocess.Popen([*SERVE, *args, "--port", str(free_port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=ENGINE_ENV)
        started.append(proc)
        base = f"http://127.0.0.1:{free_port}"
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else "server exited"
            try:
                return Served(base, httpx.get(f"{base}/health", timeout=2).json(), proc)
            except httpx.TransportError:
                assert time.monotonic() < deadline, f"{base} never answered"
                time.sleep(0.1)

    yield start
    for proc in started:
        proc.terminate()
        code = proc.wait(timeout=30)
        if proc.stderr:
            proc.stderr.close()
        assert code in (0, -signal.SIGTERM)


@dataclass
class ObjectStore:
    data: Path  # the store's directory: the object s3://B/K is the plain file data/B/K
    aws_files: dict[str, str]  # AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE, as `versitygw.sh env` prints them
    bucket: str = "rollflow"

    def ref(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    def file_of(self, key: str) -> Path:
        return self.data / self.bucket / key


@pytest.fixture(scope="session")
def versitygw(tmp_path_factory):
    """A real versitygw (object-store/versitygw.sh) on a free port, serving a throw-away directory for the session."""
    binary = Path(os.environ.get("ROLLFLOW_CACHE", REPO / ".cache")) / "go" / "bin" / "versitygw"
    if not os.access(binary, os.X_OK):
        pytest.fail(f"no versitygw binary at {binary}: `make setup` builds it (object-store/versitygw.sh path)")
    home = tmp_path_factory.mktemp("object-store")
    # The user's own AWS settings must not leak into the store's root key.
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(ROLLFLOW_S3_ADDRESS=f"127.0.0.1:{_free_port()}", ROLLFLOW_S3_DIR=str(home), ROLLFLOW_S3_BUCKETS="rollflow")
    script = str(REPO / "object-store" / "versitygw.sh")

    def run(command: str) -> str:
        done = subprocess.run([script, command], capture_output=True, text=True, timeout=60, env=env)
        if done.returncode != 0:
            pytest.fail(f"versitygw.sh {command} failed ({done.returncode}): {done.stderr}")
        return done.stdout

    try:
        run("start")
        exports = [shlex.split(line)[1] for line in run("env").splitlines() if line.startswith("export ")]
        yield ObjectStore(home / "data", dict(e.split("=", 1) for e in exports))
    finally:
        run("stop")


@pytest.fixture
def object_store(versitygw, monkeypatch):
    """The session's versitygw, with this test's AWS environment pointing at it alone (and a fresh client)."""
    for name in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(name)
    for name, value in versitygw.aws_files.items():
        monkeypatch.setenv(name, value)
    objects.reset_client()
    yield versitygw
    objects.reset_client()


@pytest.fixture
def unreachable_object_store(object_store, monkeypatch, tmp_path, free_port) -> str:
    """The AWS environment of the store, but its endpoint a port nothing listens on; returns that endpoint."""
    endpoint = f"http://127.0.0.1:{free_port}"
    config = tmp_path / "aws-config"
    config.write_text(f"[default]\nregion = us-east-1\nendpoint_url = {endpoint}\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # a refused connection is not retried: the error comes at once
    objects.reset_client()
    return endpoint
