"""The seccomp filter every sandboxed command runs under, built with libseccomp and handed to bwrap (``--seccomp FD``).

Default allow: the sandbox runs ordinary programs (compilers, test suites, shells), and an allow-list
would break them in ways nobody can predict. What is denied is what no test suite needs and what makes
the kernel's attack surface, or the sandbox's walls, larger:

- **new namespaces**: ``unshare``/``clone`` with any ``CLONE_NEW*`` flag and ``setns``. A user namespace
  gives the unprivileged uid a full set of capabilities over fresh mount/net namespaces (mounting a
  tmpfs, raw sockets, nf_tables): the path of most recent kernel privilege escalations. ``clone3``
  answers ENOSYS, since its flags sit in a struct a filter cannot read; glibc then falls back to ``clone``,
  whose flags it can.
- **mounts**: ``mount``, ``umount2``, ``pivot_root``, ``chroot`` and the new mount API (``open_tree``,
  ``move_mount``, ``fs*``, ``mount_setattr``, ``open_tree_attr``). The uid has no capability for them
  anyway; denying them here keeps it so inside any namespace the kernel might still hand out.
- **kernel keyrings**: ``keyctl``, ``add_key``, ``request_key``. Keyrings are per uid and outlive the
  processes that made them: a key added in one lease would be there for the next workspace given the
  same uid. Also a long list of kernel CVEs.
- **tracing and other processes' memory**: ``ptrace``, ``process_vm_readv``/``writev``, ``pidfd_getfd``,
  ``kcmp``; gdb and strace do not work inside (no test suite needs them).
- **kernel attack surface with no use for a test suite**: ``bpf``, ``perf_event_open``, ``userfaultfd``
  (widens kernel race windows in exploits), ``io_uring_*`` (its operations bypass seccomp; programs fall
  back to plain syscalls on EPERM), ``modify_ldt``, ``open_by_handle_at``.
- **the machine's own**: ``kexec_*``, ``*_module``, ``reboot``, ``swapon``/``swapoff``, ``acct``,
  ``syslog`` (kernel log: addresses), ``quotactl*``, ``nfsservctl``, ``lookup_dcookie``, ``vhangup``,
  ``uselib``, ``iopl``/``ioperm``, ``settimeofday``/``clock_settime``/``clock_adjtime``/``adjtimex``,
  ``fanotify_init``. Most need a capability the uid lacks; the filter makes that independent of caps.

Every denial is EPERM, as a capability check would answer. Left allowed on purpose: ``personality``
(its flags, ASLR off say, change only the caller's own later execs, and no-new-privs stops a setuid
exec); syscalls newer than this libseccomp that are not listed here by number (default allow).

Architectures: the filter is for x86_64 only; any other ABI (i386 via ``int 0x80``, x32) kills the
process (``ACT_BADARCH``), since a foreign ABI has its own syscall numbers the rules do not cover.
"""
from __future__ import annotations

import os
import platform
import threading

from .errors import SandboxUnavailable

EPERM, ENOSYS = 1, 38
# CLONE_NEW{NS,CGROUP,UTS,IPC,USER,PID,NET}; CLONE_NEWTIME (0x80) too for unshare, but not for clone,
# where the low byte is the exit signal.
CLONE_NEW_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)
CLONE_NEWTIME = 0x00000080

DENIED = (
    "setns",
    "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount",
    "fspick", "mount_setattr", "open_tree_attr",
    "keyctl", "add_key", "request_key",
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "modify_ldt", "open_by_handle_at",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot", "swapon",
    "swapoff", "acct", "syslog", "quotactl", "quotactl_fd", "nfsservctl", "lookup_dcookie", "vhangup", "uselib",
    "iopl", "ioperm", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "fanotify_init",
)
# x86_64 numbers of denied syscalls newer than the libseccomp this was written against (2.5.4): it
# resolves them to -1, so they are added by number. Any other name it does not know is an error.
X86_64_NUMBERS = {"open_tree_attr": 467}

_lock = threading.Lock()
_bpf: bytes | None = None


def _library():
    try:
        import pyseccomp
    except (ImportError, RuntimeError) as e:  # pyseccomp raises RuntimeError when libseccomp.so is missing
        raise SandboxUnavailable(f"the seccomp filter cannot be built: {e}; install the Debian package libseccomp2 "
                                 "and the Python package pyseccomp (python-engines/requirements.txt)") from e
    return pyseccomp


def build_filter():
    """The filter, as a pyseccomp.SyscallFilter (export_pfc shows it readably)."""
    if platform.machine() != "x86_64":
        raise SandboxUnavailable(f"the seccomp filter is written for x86_64; this machine is {platform.machine()}")
    sc = _library()
    f = sc.SyscallFilter(sc.ALLOW)
    f.set_attr(sc.Attr.ACT_BADARCH, sc.KILL_PROCESS)
    # A binary tree over syscall numbers instead of a linear chain: with default allow, every syscall
    # the command makes would otherwise walk all the rules before it is allowed.
    f.set_attr(sc.Attr.CTL_OPTIMIZE, 2)
    for name in DENIED:
        f.add_rule(sc.ERRNO(EPERM), _number(sc, name))
    f.add_rule(sc.ERRNO(ENOSYS), _number(sc, "clone3"))
    for flag in CLONE_NEW_FLAGS:
        f.add_rule(sc.ERRNO(EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    for flag in (*CLONE_NEW_FLAGS, CLONE_NEWTIME):
        f.add_rule(sc.ERRNO(EPERM), "unshare", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    return f


def _number(sc, name: str) -> int:
    nr = sc.resolve_syscall(sc.Arch.NATIVE, name)
    if nr < 0:
        nr = X86_64_NUMBERS.get(name, -1)
    if nr < 0:
        raise SandboxUnavailable(f"libseccomp does not know the syscall {name!r}: the seccomp filter cannot be built")
    return nr


def bpf() -> bytes:
    """The compiled BPF program, built once per process."""
    global _bpf
    with _lock:
        if _bpf is None:
            f = build_filter()
            fd = os.memfd_create("rollflow-seccomp-build", os.MFD_CLOEXEC)
            try:
                f.export_bpf(_Fd(fd))
                os.lseek(fd, 0, os.SEEK_SET)
                _bpf = b"".join(iter(lambda: os.read(fd, 65536), b""))
            finally:
                os.close(fd)
        return _bpf


class _Fd:
    """What pyseccomp's export_bpf wants: something with a fileno()."""

    def __init__(self, fd: int):
        self.fd = fd

    def fileno(self) -> int:
        return self.fd


def data_fd(data: bytes, name: str) -> int:
    """A fresh fd (a memfd at offset 0, close-on-exec) holding ``data``, for bwrap to read.

    A memfd, not a pipe: a pipe would block the writer past 64 KiB before bwrap reads. Close-on-exec, so
    only the child that names it in ``pass_fds`` gets it; bwrap reads it and closes it before the command
    starts (tests check /proc/self/fd inside)."""
    fd = os.memfd_create(name, os.MFD_CLOEXEC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd
