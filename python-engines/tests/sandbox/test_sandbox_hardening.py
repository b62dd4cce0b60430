"""The hardening layers (seccomp, the args descriptor, NOFILE/core, the memory cgroup, the workspace tmpfs,
the Python binds) and the start-up probe. The attacks themselves are in tests/redteam/."""
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import ValidationError

from rollflow_engines.sandbox import Limits, LimitsConfig, SandboxUnavailable, check_sandbox, open_workspace, reap_orphans
from rollflow_engines.sandbox import cgroups, check, mounts, seccomp
from rollflow_engines.sandbox.launch import hardening
from rollflow_engines.sandbox.wsfs import mounts_under

from .helpers import CHILD_ENV, uid_processes, wait_for
from .test_sandbox_lifecycle import start_holder


def test_no_descriptor_of_the_server_reaches_the_sandbox(workspace):
    r = workspace.run(["python", "-c", "import os; print(sorted(int(f) for f in os.listdir('/proc/self/fd')))"])
    assert json.loads(r.stdout) == [0, 1, 2, 3], r  # stdin, stdout, stderr and listdir's own


def test_the_command_s_cmdline_and_environment_hold_no_host_path_but_the_venv_on_path(workspace):
    r = workspace.run("tr '\\0' '\\n' < /proc/self/environ; tr '\\0' ' ' < /proc/$$/cmdline")
    venv_bin = str(mounts.venv_bin())
    for line in r.stdout.splitlines():
        for host in ("/work/", "/root/", str(workspace.record)):
            assert host not in line.replace(venv_bin, ""), (host, line)


def test_new_limits_are_validated_options():
    assert LimitsConfig(memory_total_mb=512, max_open_files=64).to_limits().max_open_files == 64
    for bad in ({"memory_total_mb": 1}, {"max_open_files": 2}, {"max_open_files": 1 << 30}):
        with pytest.raises(ValidationError):
            LimitsConfig(**bad)
    assert "RLIMIT_NOFILE" in LimitsConfig.model_fields["max_open_files"].description


def test_open_files_and_core_limits_are_set(workspace):
    assert workspace.run("ulimit -n; ulimit -c").stdout.split() == ["256", "0"]


def test_dash_and_prlimit_set_the_same_rlimits(workspace, monkeypatch):
    """With a cgroup, dash's ulimit sets the rlimits (one exec fewer); without dash, prlimit does: the same ones."""
    from rollflow_engines.sandbox import command

    limits = Limits(cpu_s=7, memory_mb=300, max_procs=20, max_file_mb=3, max_open_files=99)
    show = "cat /proc/self/limits"
    with_dash = workspace.run(show, limits=limits).stdout
    monkeypatch.setattr(command, "DASH", "/nonexistent/dash")
    with_prlimit = workspace.run(show, limits=limits).stdout
    assert with_dash == with_prlimit
    for row in ("Max cpu time              7                    8", "Max open files            99                   99",
                f"Max address space         {300 << 20}            {300 << 20}", "Max processes             20                   20",
                f"Max file size             {3 << 20}              {3 << 20}", "Max core file size        0                    0"):
        assert row in with_dash, with_dash


def test_the_filter_denies_every_listed_syscall_and_kills_foreign_abis(capfd):
    f = seccomp.build_filter()
    f.export_pfc(sys.stdout)
    pfc = capfd.readouterr().out
    for name in (*seccomp.DENIED, "clone", "clone3", "unshare"):
        nr = seccomp.X86_64_NUMBERS.get(name) or seccomp._number(seccomp._library(), name)
        assert f"($syscall == {nr})" in pfc, name
    assert "action ERRNO(38);" in pfc  # clone3: ENOSYS, so glibc falls back to clone
    assert pfc.split("# invalid architecture action")[1].split()[0:2] == ["action", "KILL_PROCESS;"]


def test_each_run_gets_its_own_cgroup_and_leaves_none(workspace, monkeypatch):
    mode = cgroups.memory_mode()
    if mode.kind == "rlimit":
        pytest.skip(mode.reason)
    made = []

    class Recorded(cgroups.RunCgroup):
        def __init__(self, *args):
            super().__init__(*args)
            made.append(self.path)

    monkeypatch.setattr(cgroups, "RunCgroup", Recorded)
    for _ in range(2):
        assert workspace.run("true").exit_code == 0
    assert [path.parent for path in made] == [mode.base] * 2 and made[0] != made[1]
    # only this workspace's are looked for: the base is shared with the other pytest worker's runs
    assert all(path.name.startswith(f"{workspace.record.name}-") and not path.exists() for path in made)


def test_the_janitor_sweeps_empty_leftover_cgroups_only():
    shared = cgroups.memory_mode()
    if shared.kind == "rlimit":
        pytest.skip(shared.reason)
    # A base of its own: a sweep without grace in the shared one would take the other pytest worker's
    # run cgroup in the moment between its mkdir and its process joining it.
    mode = replace(shared, base=shared.base.with_name(f"{cgroups.BASE_NAME}-sweep-test-{os.getpid()}"))
    mode.base.mkdir()
    leftover, taken = mode.base / "0123456789abcdef-dead", mode.base / "0123456789abcdef-busy"
    leftover.mkdir()
    taken.mkdir()
    holder = subprocess.Popen(["sh", "-c", 'echo $$ > "$1" && read x', "sh", str(taken / "cgroup.procs")], stdin=subprocess.PIPE)
    try:
        wait_for(lambda: str(holder.pid) in (taken / "cgroup.procs").read_text(), "the holder joined its cgroup")
        assert cgroups.sweep(mode) == 0  # younger than the grace period: maybe a run about to start
        assert cgroups.sweep(mode, grace_s=0) == 1 and not leftover.exists()
        assert taken.exists()  # a cgroup with a process in it stays
    finally:
        holder.communicate(b"\n")
        for d in (leftover, taken, mode.base):
            if d.exists():
                d.rmdir()


def test_without_cgroups_the_fallback_is_named():
    with pytest.MonkeyPatch.context() as m:
        m.setattr(cgroups, "_mounts", lambda: (None, None))
        mode = cgroups._detect()
    assert mode.kind == "rlimit" and "no cgroup2 mount" in mode.reason and "no cgroup1 memory hierarchy" in mode.reason
    assert "RLIMIT_AS per process only" in mode.describe()
    with hardening(cgroup=False):
        assert "RLIMIT_AS only" in check.report().memory


def test_the_workspace_is_a_capped_tmpfs_unmounted_on_removal(tmp_path):
    root = tmp_path / "a root with spaces"  # mountinfo escapes them: unmounting must still find the mount
    with open_workspace(root, "tests", disk_mb=8, max_inodes=100) as ws:
        assert mounts_under(root) == [ws.record]
        r = ws.run("df -k --output=size,itotal /workspace | tail -1; head -c 9000000 /dev/zero > /tmp/big")
        size_kb, inodes = map(int, r.stdout.split())
        assert size_kb == 8192 and inodes == 100 and "No space left on device" in r.stderr, r
    assert mounts_under(root) == [] and not ws.record.exists()
    with pytest.raises(ValueError, match="disk_mb"):
        open_workspace(root, "tests", disk_mb=0)


def test_a_dead_server_s_tmpfs_and_run_cgroup_are_removed_by_the_janitor(root):
    proc, record, uid = start_holder(root, "dead-server", run=True)
    wait_for(lambda: len(uid_processes(uid)) >= 2, "the sleeps started")
    assert mounts_under(root) == [record]
    proc.kill()
    proc.wait()
    wait_for(lambda: uid_processes(uid) == [], "the sandbox died with its server")
    assert reap_orphans(root, max_age_s=3600, live_owners={"me"}) == 1
    assert mounts_under(root) == [] and not record.exists()
    base = cgroups.memory_mode().base
    assert base is None or list(base.glob(f"{record.name}-*")) == []


IN_A_TMP_VENV = """
import sys
from rollflow_engines.sandbox import open_workspace
with open_workspace(sys.argv[1], "venv-test") as ws:
    r = ws.run(["python", "-c", "import sys, pytest; print(sys.prefix)"])
print(r.exit_code, r.stdout.strip(), r.stderr.strip()[-500:])
"""


def test_a_venv_under_tmp_with_spaces_in_its_path_works_inside(tmp_path):
    """A checkout in /tmp: the private /tmp must not hide it, and the .pth it holds must be followed."""
    place = Path(tempfile.mkdtemp(prefix="rollflow venv "))
    try:
        venv = place / ".venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        site = next(venv.glob("lib/python*/site-packages"))
        real_site = next(p for p in sys.path if p.endswith("site-packages") and Path(p, "pytest").is_dir())
        (site / "rollflow-test.pth").write_text(real_site + "\n")
        done = subprocess.run([str(venv / "bin" / "python"), "-c", IN_A_TMP_VENV, str(tmp_path / "sandboxes")],
                              capture_output=True, text=True, env=CHILD_ENV, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        assert done.stdout.strip().split(maxsplit=1) == ["0", str(venv.resolve())], done.stdout
    finally:
        subprocess.run(["rm", "-rf", "--", str(place)], check=True)


def test_the_probe_refuses_to_start_when_python_is_not_visible_inside(root, monkeypatch):
    monkeypatch.setattr(check, "_checked", set())
    monkeypatch.setattr(mounts, "_python_dirs", [])  # as if the venv were hidden from the sandbox
    with pytest.raises(SandboxUnavailable, match=r"python not found inside the sandbox: the venv at .* is not visible"):
        check_sandbox()
    assert not root.exists()
