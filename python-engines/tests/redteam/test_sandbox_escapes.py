"""Red team: each test is one attack a policy may send from inside the sandbox, named after what it tries.

Every attack must end refused or contained, and leave nothing behind: no process of the workspace's
uid, no workspace directory, no tmpfs mounted under the root, no run cgroup (``contained``).
"""
import os
import signal
from pathlib import Path

import pytest

from rollflow_engines.sandbox import Limits, open_workspace, uids
from rollflow_engines.sandbox import cgroups
from rollflow_engines.sandbox.launch import hardening
from rollflow_engines.sandbox.uids import processes_by_uid
from rollflow_engines.sandbox.wsfs import mounts_under

EPERM = 1
# One syscall through ctypes: prints "<return value> <errno>".
SYSCALL = """
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
args = [int(a) if a.lstrip("-").isdigit() else a.encode() for a in sys.argv[2:]]
print(libc.syscall(int(sys.argv[1]), *args), ctypes.get_errno())
"""
NR = {"add_key": 248, "keyctl": 250, "request_key": 249, "bpf": 321, "perf_event_open": 298, "ptrace": 101,
      "io_uring_setup": 425, "userfaultfd": 323, "process_vm_readv": 310, "setns": 308, "open_by_handle_at": 304,
      "mount": 165, "fsopen": 430}
KEY_SPEC_USER_KEYRING = -4


def run_cgroups(ws) -> list[Path]:
    """The workspace's own run cgroups (``<workspace id>-<n>``): the base is shared with every process of
    this cgroup, such as the other pytest worker, whose runs come and go meanwhile."""
    base = cgroups.memory_mode().base
    return list(base.glob(f"{ws.record.name}-*")) if base else []


@pytest.fixture
def contained(tmp_path):
    """A fresh workspace; afterwards, proof that nothing of it is left."""
    root = tmp_path / "sandboxes"
    ws = open_workspace(root, "redteam", files={"syscall.py": SYSCALL})
    try:
        yield ws
    finally:
        ws.remove()
    assert processes_by_uid().get(ws.uid, []) == []
    assert not ws.record.exists()
    assert mounts_under(root) == []
    assert run_cgroups(ws) == []


def syscall(ws, name: str, *args) -> tuple[int, int]:
    r = ws.run(["python", "syscall.py", str(NR[name]), *map(str, args)])
    assert r.exit_code == 0, r
    ret, err = r.stdout.split()
    return int(ret), int(err)


def test_unshare_user_namespace_is_refused(contained):
    r = contained.run("unshare -Ur id")
    assert r.exit_code != 0 and "Operation not permitted" in r.stderr, r
    with hardening(seccomp=False):  # the filter is what refuses it: without it this kernel allows it
        assert contained.run("unshare -Ur id -u").stdout == "0\n"


def test_unshare_mount_namespace_is_refused(contained):
    r = contained.run("unshare -m true")
    assert r.exit_code != 0 and "Operation not permitted" in r.stderr, r


def test_mount_a_tmpfs_is_refused_directly_and_inside_a_new_user_namespace(contained):
    assert syscall(contained, "mount", "none", "/tmp", "tmpfs", 0, 0) == (-1, EPERM)
    assert syscall(contained, "fsopen", "tmpfs", 0) == (-1, EPERM)
    r = contained.run("unshare -Urm mount -t tmpfs none /tmp && echo mounted")
    assert "mounted" not in r.stdout and "unshare failed: Operation not permitted" in r.stderr, r


def test_python_clone_with_new_namespace_flags_is_refused(contained):
    code = "import os; os.unshare(os.CLONE_NEWUSER)" if hasattr(os, "unshare") else "raise PermissionError(1)"
    r = contained.run(["python", "-c", code])
    assert r.exit_code == 1 and "PermissionError" in r.stderr, r


def test_keyrings_are_refused_and_no_key_survives_into_the_next_lease_of_the_uid(contained, tmp_path, monkeypatch):
    assert syscall(contained, "add_key", "user", "rollflow", "secret", 6, KEY_SPEC_USER_KEYRING) == (-1, EPERM)
    assert syscall(contained, "keyctl", 0, KEY_SPEC_USER_KEYRING, 0) == (-1, EPERM)  # KEYCTL_GET_KEYRING_ID
    assert syscall(contained, "request_key", "user", "rollflow", 0, 0) == (-1, EPERM)
    uid = contained.uid
    contained.remove()
    # The next lease of the same uid (the pool is made to start its search there) finds no key of it.
    monkeypatch.setattr(uids.random, "randrange", lambda n: uid - uids.UID_BASE)
    with open_workspace(tmp_path / "next", "redteam", files={"syscall.py": SYSCALL}) as again:
        assert again.uid == uid
        assert syscall(again, "keyctl", 0, KEY_SPEC_USER_KEYRING, 0) == (-1, EPERM)
    with open("/proc/key-users") as f:
        assert not [line for line in f if line.split(":")[0].strip() == str(uid)]  # the kernel holds no key of the uid


def test_bpf_and_perf_event_open_are_refused(contained):
    assert syscall(contained, "bpf", 0, 0, 0) == (-1, EPERM)
    assert syscall(contained, "perf_event_open", 0, 0, -1, -1, 0) == (-1, EPERM)


def test_ptrace_and_reading_the_memory_of_a_sibling_are_refused(contained):
    code = ("import ctypes, subprocess; libc = ctypes.CDLL(None, use_errno=True); p = subprocess.Popen(['sleep', '100']); "
            f"print(libc.syscall({NR['ptrace']}, 16, p.pid, 0, 0), ctypes.get_errno()); "  # PTRACE_ATTACH
            f"print(libc.syscall({NR['process_vm_readv']}, p.pid, 0, 0, 0, 0, 0), ctypes.get_errno()); p.kill()")
    r = contained.run(["python", "-c", code])
    assert r.stdout.split() == ["-1", str(EPERM)] * 2, r


def test_io_uring_userfaultfd_setns_and_open_by_handle_are_refused(contained):
    assert syscall(contained, "io_uring_setup", 8, 0) == (-1, EPERM)
    assert syscall(contained, "userfaultfd", 0) == (-1, EPERM)
    assert syscall(contained, "setns", 0, 0) == (-1, EPERM)
    assert syscall(contained, "open_by_handle_at", 0, 0, 0) == (-1, EPERM)


FOREIGN_ABI = """
import ctypes, mmap, sys
if sys.argv[1] == "x32":
    ctypes.CDLL(None).syscall(0x40000000 | 39)  # getpid, x32 numbering
else:  # mov eax, 20 (i386 getpid); int 0x80; ret
    buf = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    buf.write(bytes([0xb8, 20, 0, 0, 0, 0xcd, 0x80, 0xc3]))
    ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(buf)))()
print("returned")
"""


@pytest.mark.parametrize("abi", ["x32", "i386"])
def test_syscalls_of_a_foreign_abi_kill_the_process(contained, abi):
    contained.write_files({"abi.py": FOREIGN_ABI})
    r = contained.run(["python", "abi.py", abi])
    assert r.signal == signal.SIGSYS and "returned" not in r.stdout, r


MEMFD_MAPPED = """
import mmap, os
fd = os.memfd_create("hog")
os.ftruncate(fd, 320 << 20)
m = mmap.mmap(fd, 320 << 20)
for i in range(0, 320 << 20, 4096):
    m[i] = 1
print("held 320 MiB")
"""
MEMFD_MANY = """
import os
fds = []
for i in range(10):  # 10 memfds of 32 MiB each: each within max_file_mb, none in any address space
    fds.append(os.memfd_create(f"hog{i}"))
    for _ in range(32):
        os.write(fds[-1], b"x" * (1 << 20))
print("held 320 MiB")
"""


@pytest.mark.parametrize("how", ["one_mapped_memfd", "ten_written_memfds"])
def test_320_mib_of_memfd_under_a_128_mib_cap_is_killed(contained, how):
    if cgroups.memory_mode().kind == "rlimit":
        pytest.skip(f"no memory cgroup on this machine: {cgroups.memory_mode().reason}")
    code, limits = {"one_mapped_memfd": (MEMFD_MAPPED, Limits(memory_total_mb=128, max_file_mb=1024)),
                    "ten_written_memfds": (MEMFD_MANY, Limits(memory_total_mb=128))}[how]
    r = contained.run(["python", "-c", code], limits=limits)
    assert "held" not in r.stdout and r.oom_killed and r.signal == signal.SIGKILL, r


def test_fd_exhaustion_stops_at_the_open_files_limit(contained):
    code = ("fds = []\ntry:\n    while True:\n        fds.append(open('/dev/null'))\nexcept OSError as e:\n"
            "    print(len(fds), e.errno)")
    r = contained.run(["python", "-c", code], limits=Limits(max_open_files=64))
    opened, err = map(int, r.stdout.split())
    assert opened < 64 and err == 24, r  # EMFILE


def test_proc_1_cmdline_shows_nothing_of_the_host(contained):
    r = contained.run("tr '\\0' ' ' < /proc/1/cmdline; echo; cat /proc/1/environ | tr '\\0' '\\n' | grep -v ^PATH=")
    cmdline, *environ = r.stdout.splitlines()
    assert cmdline.startswith("bwrap --args ") and "--ro-bind" not in cmdline, cmdline
    for host in ("/work", str(contained.record.parent.parent), str(Path.home())):
        assert host not in cmdline and not any(host in line for line in environ), (host, r.stdout)
    assert str(os.getpid()) not in cmdline.split() + [value for line in environ for value in line.split("=")]


def test_100000_files_stop_at_the_inode_cap(contained):
    r = contained.run("i=0; while [ $i -lt 100000 ]; do true > f$i || break; i=$((i+1)); done; echo $i",
                      limits=Limits(wall_s=120))
    made = int(r.stdout)
    assert 1000 < made < 20_000 and "No space left on device" in r.stderr, (made, r.stderr[-300:])
    assert contained.run("echo still works").stdout == "still works\n"


def test_filling_the_disk_stops_at_the_workspace_cap(contained):
    r = contained.run("for i in 1 2 3 4 5 6 7 8 9 10; do head -c 31000000 /dev/zero > /tmp/f$i || break; done; du -smx /tmp /workspace")
    assert "No space left on device" in r.stderr, r
    # -x: a venv that lives under /tmp is bound into the sandbox's /tmp, another file system, not counted
    assert sum(int(line.split()[0]) for line in r.stdout.splitlines()) <= 257, r


def test_a_core_dump_is_not_written(contained):
    r = contained.run("grep 'core file' /proc/self/limits; python -c 'import os; os.abort()'; ls -A /workspace /tmp")
    limit, *listing = r.stdout.splitlines()
    assert limit.split()[4:6] == ["0", "0"], r  # soft and hard RLIMIT_CORE
    assert "Aborted" in r.stderr and not [name for name in listing if "core" in name], r
