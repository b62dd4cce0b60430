"""What a sandboxed command can see and touch: each test fails if its isolation is taken away."""
import json
import os
import socket
import threading
from pathlib import Path

from rollflow_engines.sandbox import mounts, open_workspace
from rollflow_engines.sandbox.mounts import python_dirs


def test_writes_land_only_in_the_workspace(workspace, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    attempts = {"/usr": "/usr/x", "/etc": "/etc/x", "host tmp": f"{outside}/x", "host home": f"{os.path.expanduser('~')}/x",
                "root": "/x", "proc": "/proc/x"}
    for what, path in attempts.items():
        r = workspace.run(["sh", "-c", f"echo hi > {path}"])
        assert r.exit_code != 0, f"writing to {what} ({path}) succeeded"
    assert list(outside.iterdir()) == []
    assert not os.path.exists(os.path.expanduser("~/x"))
    r = workspace.run("echo hi > /workspace/made && echo hi > $HOME/home && echo hi > /tmp/scratch && echo ok")
    assert r.stdout == "ok\n", r
    assert (workspace.path / "made").read_text() == "hi\n" and (workspace.path / "home").read_text() == "hi\n"
    # its /tmp is its own, beside the workspace (with, when the venv lives under /tmp, the empty mount points of its binds)
    mount_points = {workspace.tmp / d.relative_to("/tmp").parts[0] for d in mounts.python_dirs() if d.is_relative_to("/tmp")}
    assert set(workspace.tmp.iterdir()) - mount_points == {workspace.tmp / "scratch"}


def test_a_sandbox_cannot_read_a_sibling_workspace_or_the_run_dir(root, tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "secret.txt").write_text("run secret")
    repo = Path(__file__).resolve().parents[3]
    with open_workspace(root, "tests", files={"mine.txt": "a"}) as a, open_workspace(root, "tests", files={"theirs.txt": "b"}) as b:
        assert a.run(["cat", "mine.txt"]).stdout == "a"
        for path in (b.path / "theirs.txt", run_dir / "secret.txt", __file__, repo / "Makefile", "/run/lock"):
            r = a.run(["cat", str(path)])
            assert r.exit_code != 0 and "No such file or directory" in r.stderr, (path, r)
        # Of the repository and the home directory only the empty parents of the Python installation and venv
        # exist, wherever the checkout and the venv are.
        for host_dir in (repo, Path.home().resolve()):
            r = a.run(["ls", "-A", str(host_dir)])
            assert r.stdout.split() == _entries_leading_to_python(host_dir), (host_dir, r)


def _entries_leading_to_python(host_dir: Path) -> list[str]:
    """What ``ls -A host_dir`` prints inside a sandbox: the children on the way to a bound Python dir."""
    return sorted({d.relative_to(host_dir).parts[0] for d in python_dirs() if d.is_relative_to(host_dir) and d != host_dir})


def test_the_servers_environment_does_not_reach_the_sandbox(workspace, monkeypatch):
    monkeypatch.setenv("ROLLFLOW_TEST_SECRET", "hunter2")
    r = workspace.run("env; cat /proc/1/environ")
    assert "hunter2" not in r.stdout + r.stderr
    assert "PATH=" in r.stdout


def test_no_network_not_even_the_hosts_loopback(workspace):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(0.2)
        port = server.getsockname()[1]
        accepted = []

        def accept():
            try:
                accepted.append(server.accept())
            except OSError:
                pass
        probe = f"""
import socket
for host, port in [("127.0.0.1", {port}), ("1.1.1.1", 53), ("10.255.255.53", 53)]:
    try:
        socket.create_connection((host, port), timeout=2).close()
        print("connected", host, port)
    except OSError as e:
        print("refused", host, port, type(e).__name__)
try:
    print("resolved", socket.gethostbyname("example.com"))
except OSError as e:
    print("unresolved", type(e).__name__)
"""
        r = workspace.run(["python", "-c", probe])
        accept()
    assert r.exit_code == 0, r
    assert [line.split()[0] for line in r.stdout.splitlines()] == ["refused"] * 3 + ["unresolved"], r.stdout
    assert accepted == []


def test_own_pid_namespace_and_session(workspace):
    r = workspace.run(["python", "-c", "import os; print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit())); "
                                       "print(os.getsid(0)); print(open('/proc/1/cmdline').read().split(chr(0))[0])"])
    pids, own_session, init = r.stdout.splitlines()
    assert json.loads(pids) == [1, 2], r.stdout  # bwrap's init and the command: nothing of the host
    # --new-session: a session led inside the namespace (a leader outside it, such as the server's, reads as 0)
    assert own_session == "1" and init == "bwrap"


def test_runs_as_an_unprivileged_uid_of_its_own_with_no_capabilities(root):
    with open_workspace(root, "tests") as a, open_workspace(root, "tests") as b:
        assert a.uid != b.uid and a.uid >= 1_000_000
        r = a.run("id -u; grep CapEff /proc/self/status; cat /etc/shadow")
        assert r.stdout.splitlines() == [str(a.uid), "CapEff:\t0000000000000000"]
        assert "Permission denied" in r.stderr


def test_python_and_pytest_work_inside(root):
    files = {"test_it.py": "def test_one():\n    assert 1 + 1 == 2\n"}
    with open_workspace(root, "tests", files=files) as ws:
        r = ws.run("python -m pytest -q -p no:cacheprovider test_it.py")
    assert r.exit_code == 0 and "1 passed" in r.stdout, r


def test_concurrent_runs_in_threads(root):
    results = {}

    def one(i):
        with open_workspace(root, "tests", files={"n": str(i)}) as ws:
            results[i] = ws.run("cat n").stdout
    threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {i: str(i) for i in range(6)}


def test_read_only_binds_are_read_only_inside(workspace, tmp_path):
    """What a grading must read and must not change (its hidden tests) is bound read-only."""
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "test_x.py").write_text("def test_x(): assert False\n")
    os.chmod(hidden, 0o777)  # even a directory anyone may write on the host
    r = workspace.run("cat /grading/test_x.py && echo 'def test_x(): pass' > /grading/test_x.py; touch /grading/new; echo done",
                      ro_binds={"/grading": hidden})
    assert r.stdout.startswith("def test_x(): assert False\n") and r.stdout.endswith("done\n"), r
    assert r.stderr.count("Read-only file system") == 2, r
    assert sorted(p.name for p in hidden.iterdir()) == ["test_x.py"] and "assert False" in (hidden / "test_x.py").read_text()
