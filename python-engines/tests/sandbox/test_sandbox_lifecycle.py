"""Cleanup however a workspace's life ends, the janitor, and refusing to run where no sandbox can be made."""
import asyncio
import fcntl
import json
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from rollflow_engines.sandbox import (Limits, SandboxError, SandboxUnavailable, check_sandbox, open_workspace,
                                      reap_orphans)
from rollflow_engines.sandbox.uids import LOCK_DIR

from .helpers import CHILD_ENV, uid_processes, wait_for

SLEEP_FOREVER = "sleep 1000 & sleep 1000"


def uid_is_free(uid: int) -> bool:
    fd = os.open(LOCK_DIR / str(uid), os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def assert_gone(ws) -> None:
    assert not ws.record.exists()
    assert uid_processes(ws.uid) == []
    assert uid_is_free(ws.uid)


def test_files_are_written_and_owned_by_the_sandbox(root):
    with open_workspace(root, "tests", files={"pkg/mod.py": "X = 1\n", "README": "hi"}) as ws:
        assert (ws.path / "pkg" / "mod.py").read_text() == "X = 1\n"
        assert {p.stat().st_uid for p in ws.path.rglob("*")} == {ws.uid}
        assert ws.run("echo more >> README && cat README").stdout == "himore\n"
        with pytest.raises(ValueError, match="outside the workspace"):
            ws.write_files({"../escape": "x"})
        ws.run("ln -s /etc/passwd link")
        with pytest.raises(ValueError, match="is a symlink"):
            ws.read_text("link", 1000)


def test_bad_owner_and_mode_are_refused(root):
    with pytest.raises(ValueError, match="owner: got '../up'"):
        open_workspace(root, "../up")
    with pytest.raises(ValueError, match="mode: got 'docker'"):
        open_workspace(root, "tests", mode="docker")


def test_remove_kills_deletes_and_frees_the_uid_and_is_idempotent(root):
    ws = open_workspace(root, "tests")
    ws.remove()
    ws.remove()
    assert_gone(ws)
    assert not (root / "tests").exists()  # the owner's last workspace takes its directory along
    with pytest.raises(SandboxError, match="removed"):
        ws.run("true")


def test_an_exception_inside_the_with_cleans_up(root):
    with pytest.raises(RuntimeError):
        with open_workspace(root, "tests") as ws:
            ws.run("echo x > f")
            raise RuntimeError("the episode failed")
    assert_gone(ws)


def test_remove_from_another_thread_cancels_a_run_in_progress(root):
    ws = open_workspace(root, "tests")
    outcome = []

    def run():
        try:
            outcome.append(ws.run(SLEEP_FOREVER, limits=Limits(wall_s=600)))
        except SandboxError as e:
            outcome.append(e)
    t = threading.Thread(target=run)
    t.start()
    wait_for(lambda: len(uid_processes(ws.uid)) >= 2, "the sleeps started")
    ws.remove()
    t.join(timeout=60)
    assert not t.is_alive()
    assert isinstance(outcome[0], SandboxError) and "removed while" in str(outcome[0])
    assert_gone(ws)


def test_a_cancelled_asyncio_task_cleans_up(root):
    seen = {}

    async def episode():
        with open_workspace(root, "tests") as ws:
            seen["ws"] = ws
            await asyncio.to_thread(ws.run, SLEEP_FOREVER, limits=Limits(wall_s=600))

    async def main():
        task = asyncio.create_task(episode())
        await asyncio.to_thread(wait_for, lambda: "ws" in seen and len(uid_processes(seen["ws"].uid)) >= 2, "the sleeps started")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    asyncio.run(main())
    assert_gone(seen["ws"])


def test_a_workspace_deleted_underneath_is_a_sandbox_error(root):
    with open_workspace(root, "tests") as ws:
        subprocess.run(["rm", "-rf", str(ws.path)], check=True)
        with pytest.raises(SandboxError, match="is gone"):
            ws.run("true")


HOLDER = """
import sys, time
from rollflow_engines.sandbox import Limits, open_workspace
ws = open_workspace(sys.argv[1], sys.argv[2])
print(ws.record, ws.uid, flush=True)
if sys.argv[3] == "run":
    ws.run("sleep 1000 & sleep 1000", limits=Limits(wall_s=600))
time.sleep(1000)
"""


def start_holder(root: Path, owner: str, run: bool):
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(root), owner, "run" if run else "idle"],
                            stdout=subprocess.PIPE, text=True, env=CHILD_ENV)
    record, uid = proc.stdout.readline().split()
    proc.stdout.close()
    return proc, Path(record), int(uid)


def test_when_the_server_dies_its_sandboxes_die_and_the_janitor_reaps_the_workspace(root):
    proc, record, uid = start_holder(root, "dead-server", run=True)
    wait_for(lambda: len(uid_processes(uid)) >= 2, "the sleeps started")
    proc.kill()
    proc.wait()
    wait_for(lambda: uid_processes(uid) == [], "the sandbox died with its server (--die-with-parent)")
    assert record.exists()
    assert reap_orphans(root, max_age_s=3600, live_owners={"me"}) == 1
    assert not record.exists() and not (root / "dead-server").exists()


def test_the_janitor_leaves_another_live_process_alone_until_max_age(root):
    proc, record, uid = start_holder(root, "other-server", run=False)
    try:
        assert reap_orphans(root, max_age_s=3600, live_owners={"me"}) == 0
        assert record.exists()
        assert reap_orphans(root, max_age_s=0, live_owners={"me"}) == 1
        assert not record.exists()
    finally:
        proc.kill()
        proc.wait()


def test_the_janitor_removes_this_process_s_workspaces_of_dead_owners_and_over_age(root):
    with open_workspace(root, "live") as live, open_workspace(root, "gone") as gone:
        assert reap_orphans(root, max_age_s=3600, live_owners={"live"}) == 1
        assert_gone(gone)
        assert live.run("echo ok").stdout == "ok\n"
        assert reap_orphans(root, max_age_s=0, live_owners={"live"}) == 1
        assert_gone(live)
        with pytest.raises(SandboxError):
            live.run("true")


def test_the_janitor_removes_lockless_debris_only_once_old(root):
    debris = root / "crashed" / "0123456789abcdef"
    debris.mkdir(parents=True)
    assert reap_orphans(root, max_age_s=3600, live_owners=set()) == 0
    old = time.time() - 3600
    os.utime(debris, (old, old))
    assert reap_orphans(root, max_age_s=3600, live_owners=set()) == 1
    assert not debris.exists()


def test_a_missing_bwrap_is_named(root, tmp_path):
    with pytest.raises(SandboxUnavailable, match=r"'/nowhere/bwrap' was not found: install the Debian package bubblewrap"):
        check_sandbox(bwrap="/nowhere/bwrap")
    with pytest.raises(SandboxUnavailable, match="bubblewrap"):
        open_workspace(root, "tests", bwrap="/nowhere/bwrap")
    assert not root.exists() or list(root.iterdir()) == []


def test_bwrap_that_cannot_create_namespaces_is_named(root, tmp_path):
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: Creating new namespace failed: Operation not permitted' >&2\nexit 1\n")
    fake.chmod(0o755)
    with pytest.raises(SandboxUnavailable) as e:
        open_workspace(root, "tests", bwrap=str(fake))
    assert "Creating new namespace failed: Operation not permitted" in str(e.value) and "namespaces" in str(e.value)


def test_mode_none_runs_unsandboxed_only_when_asked_and_warns_every_time(root, caplog):
    caplog.set_level(logging.WARNING, logger="rollflow_engines.sandbox")
    for _ in range(2):
        with open_workspace(root, "trusted", mode="none", files={"f": "x\n"}) as ws:
            assert ws.uid is None
            r = ws.run("pwd; cat f; echo $HOME")
            assert r.stdout.splitlines() == [str(ws.path), "x", str(ws.path)]
            assert ws.run("sleep 1000", limits=Limits(wall_s=0.5)).timed_out
        assert not ws.record.exists()
    warnings = [r for r in caplog.records if "UNSANDBOXED" in r.getMessage()]
    assert len(warnings) == 2 and all(r.levelno == logging.WARNING for r in warnings)


def test_the_lock_file_records_the_uid(root):
    with open_workspace(root, "tests") as ws:
        assert json.loads((ws.record / "lock").read_text())["uid"] == ws.uid
