"""What the benches of Temporal's own costs (bench/capacity, bench/turn-cost) read around a run: CPU time of a
process from /proc, PostgreSQL's CPU, the Temporal server's Prometheus counters, and a run started with rollflow's
CLI and waited for with Temporal's, and free ports. A bench imports it with bench/ first on `sys.path`; run.sh
scripts run `python3 bench/costs.py free-ports N`."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HZ = os.sysconf("SC_CLK_TCK")
# One sample of Prometheus' text format: name{label="value",...} number (the labels optional).
_SAMPLE = re.compile(r'^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)')
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def sh(*args: str) -> str:
    """Runs a command from the repository root; its stdout, or an error carrying the end of its stderr."""
    r = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} exited {r.returncode}: {r.stderr.strip()[-2000:]}")
    return r.stdout.strip()


def ticks(pid: int) -> int:
    """utime + stime + cutime + cstime of a live process; 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0
    return sum(int(x) for x in fields[11:15])


def pid_in(file: Path) -> int:
    return int(file.read_text().split()[0])


def worker_pid(state: Path) -> int:
    """The pid of the stack's worker under the state directory `state` (ROLLFLOW_STATE): one worker a bench stack."""
    return pid_in(next((state / "pids").glob("worker-*.pid")))


def pg_ticks(pgdata: Path) -> int:
    """PostgreSQL's CPU: the postmaster with the backends it reaped (its cutime) and the ones still alive."""
    postmaster = pid_in(pgdata / "postmaster.pid")
    children = sh("ps", "-o", "pid=", "--ppid", str(postmaster)).split()
    return ticks(postmaster) + sum(ticks(int(c)) for c in children)


def prometheus(port: int) -> Iterator[tuple[str, dict[str, str], float]]:
    """Every sample the Temporal server exposes on 127.0.0.1:port/metrics: (name, labels, value)."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if m and not line.startswith("#"):
            yield m[1], dict(_LABEL.findall(m[2] or "")), float(m[3])


def run_to_completion(config: str, run_id: str, sets: list[str], address: str, cli: str) -> float:
    """Starts a run (`rollflow run … --run-id`) and waits for its workflow's result with Temporal's CLI (no status
    polls, which would cost the server work of their own); its wall seconds. Raises unless it completed."""
    started = time.time()
    sh("bin/rollflow", "run", config, "--run-id", run_id, *[a for kv in sets for a in ("--set", kv)])
    result = json.loads(sh(cli, "workflow", "result", "--address", address, "--workflow-id", run_id, "-o", "json"))
    if result.get("status") not in ("COMPLETED", "WORKFLOW_EXECUTION_STATUS_COMPLETED"):
        raise RuntimeError(f"{run_id} did not complete: {json.dumps(result)[:500]}")
    return time.time() - started


def free_ports(n: int) -> list[int]:
    """n loopback ports free right now: on a shared machine another stack's engine on a fixed port would answer."""
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


if __name__ == "__main__":  # `python3 bench/costs.py free-ports N`, for the run.sh scripts
    if sys.argv[1:2] != ["free-ports"] or len(sys.argv) != 3:
        sys.exit("usage: costs.py free-ports N")
    print(*free_ports(int(sys.argv[2])))
