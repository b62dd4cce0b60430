"""The command line of one sandboxed run: a memory cgroup and rlimits (dash), namespaces and seccomp (bwrap),
an unprivileged uid (setpriv).

    /bin/dash -c 'echo $$ > CGROUP/cgroup.procs && ulimit -t -v -p -f -n -c ... && exec "$@"'
      bwrap --args FD -- setpriv --reuid=U --regid=U --clear-groups --no-new-privs --inh-caps=-all
        --bounding-set=-all -- COMMAND
      where FD holds bwrap's options, NUL-separated: --unshare-{ipc,pid,net,uts,cgroup-try}
        --die-with-parent --new-session --seccomp FD2 --ro-bind ... --bind WORKSPACE /workspace ...

Without a memory cgroup (or without dash), ``prlimit --cpu --as --nproc --fsize --nofile --core=0 --``
sets the same rlimits in place of the shell.

Each execs the next: one process, which joins its cgroup before anything else runs, so every process of
the sandbox is counted there (no window in which a child escapes it). bwrap's options come from a file
descriptor (``--args``), so the sandbox's pid 1, bwrap's init, shows only ``bwrap --args N -- setpriv
... -- COMMAND`` in /proc/1/cmdline: the sandbox's own uid and command, nothing of the host (paths,
binds). The command itself cannot go in the descriptor: bwrap takes it from its real argv only. bwrap runs as root (the server's user),
so it can bind what the sandbox needs wherever it lives (the Python installation may sit under /root,
which no other uid may enter), keeping only the three capabilities setpriv needs to become the
workspace's uid; setpriv then drops every capability for good (no-new-privs: no setuid program regains
any). The seccomp filter (seccomp.py) is loaded by bwrap just before it execs setpriv, so it binds
setpriv and everything after it. rlimits are set first and are inherited by everything; RLIMIT_NPROC
binds once the uid is not root. ``--die-with-parent`` kills the sandbox when the server thread that
started it dies; ``--new-session`` keeps it off the server's terminal. When the sandbox's first process
(bwrap's init, pid 1 of its pid namespace) exits, the kernel kills everything else in the namespace: no
process outlives its run (``Workspace.run`` waits for that init, see workspace.py).
"""
from __future__ import annotations

import os

from .limits import Limits

MiB = 1 << 20
# Only what setpriv needs, and setpriv gives them up before the command starts.
SETPRIV_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP")
# $1 is the cgroup.procs file; the rest is the command line to exec once this shell is in the cgroup
# and has set the rlimits (shell_limits). One shell instead of a shell and prlimit: one exec fewer per run.
CGROUP_WRAPPER = 'echo $$ > "$1" && shift && {limits} && exec "$@"'
# dash's ulimit (Debian's /bin/sh): -t CPU s, -v address space KiB, -p processes, -f 512-byte blocks,
# -n open files, -c core blocks. The cgroup wrapper runs it; without dash it goes through prlimit.
DASH = "/bin/dash"


def rlimit_args(limits: Limits) -> list[str]:
    return ["prlimit", f"--cpu={limits.cpu_s}:{limits.cpu_s + 1}",  # SIGXCPU at the soft limit, SIGKILL a second later
            f"--as={limits.memory_mb * MiB}", f"--nproc={limits.max_procs}", f"--fsize={limits.max_file_mb * MiB}",
            f"--nofile={limits.max_open_files}", "--core=0", "--"]


def shell_limits(limits: Limits) -> str:
    """The same rlimits as ``rlimit_args``, as dash ``ulimit`` builtins (the CPU time soft first: a hard limit below
    the soft one is refused)."""
    return (f"ulimit -S -t {limits.cpu_s} && ulimit -H -t {limits.cpu_s + 1} && ulimit -v {limits.memory_mb * 1024} && "
            f"ulimit -p {limits.max_procs} && ulimit -f {limits.max_file_mb * 2048} && ulimit -n {limits.max_open_files} && ulimit -c 0")


def bwrap_options(status_fd: int | None, seccomp_fd: int | None, filesystem: list[str]) -> list[str]:
    """bwrap's options, as they go into the ``--args`` descriptor."""
    status = ["--json-status-fd", str(status_fd)] if status_fd is not None else []
    seccomp = ["--seccomp", str(seccomp_fd)] if seccomp_fd is not None else []
    caps = [arg for cap in SETPRIV_CAPS for arg in ("--cap-add", cap)]
    return ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
            "--die-with-parent", "--new-session", "--hostname", "sandbox", *caps, *status, *seccomp, *filesystem]


def inner_command(uid: int, command: list[str]) -> list[str]:
    """What bwrap runs: setpriv drops to the workspace's uid and every capability, then execs the command."""
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs",
            "--inh-caps=-all", "--bounding-set=-all", "--", *command]


def nul_separated(args: list[str]) -> bytes:
    """The ``--args`` format: each argument NUL-terminated (so spaces, quotes, newlines are plain bytes)."""
    if any("\0" in a for a in args):
        raise ValueError("an argument holds a NUL byte")
    return b"".join(os.fsencode(a) + b"\0" for a in args)


def launch_argv(bwrap: str, args_fd: int, limits: Limits, cgroup_procs: str | None, inner: list[str]) -> list[str]:
    sandbox = [bwrap, "--args", str(args_fd), "--", *inner]
    if cgroup_procs is None:
        return [*rlimit_args(limits), *sandbox]
    if os.path.exists(DASH):
        return [DASH, "-c", CGROUP_WRAPPER.format(limits=shell_limits(limits)), "rollflow-cgroup", cgroup_procs, *sandbox]
    return ["/bin/sh", "-c", CGROUP_WRAPPER.format(limits="true"), "rollflow-cgroup", cgroup_procs, *rlimit_args(limits), *sandbox]
