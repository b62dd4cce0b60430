"""The command line of one sandboxed run: rlimits (prlimit), namespaces (bwrap), an unprivileged uid (setpriv).

    prlimit --cpu --as --nproc --fsize -- bwrap --unshare-{ipc,pid,net,uts,cgroup-try} --die-with-parent
        --new-session ... -- setpriv --reuid=U --regid=U --clear-groups --no-new-privs --inh-caps=-all
        --bounding-set=-all -- COMMAND

bwrap runs as root (the server's user), so it can bind what the sandbox needs wherever it lives (the
Python installation may sit under /root, which no other uid may enter), keeping only the three
capabilities setpriv needs to become the workspace's uid; setpriv then drops every capability for good
(no-new-privs: no setuid program regains any). rlimits are set first and are inherited by everything;
RLIMIT_NPROC binds once the uid is not root. ``--die-with-parent`` kills the sandbox when the server
thread that started it dies; ``--new-session`` keeps it off the server's terminal. When the sandbox's
first process (bwrap's init, pid 1 of its pid namespace) exits, the kernel kills everything else in the
namespace: no process outlives its run (``Workspace.run`` waits for that init, see workspace.py).
"""
from __future__ import annotations

from .limits import Limits

MiB = 1 << 20
# Only what setpriv needs, and setpriv gives them up before the command starts.
SETPRIV_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP")


def rlimit_args(limits: Limits) -> list[str]:
    return ["prlimit", f"--cpu={limits.cpu_s}:{limits.cpu_s + 1}",  # SIGXCPU at the soft limit, SIGKILL a second later
            f"--as={limits.memory_mb * MiB}", f"--nproc={limits.max_procs}", f"--fsize={limits.max_file_mb * MiB}", "--"]


def sandbox_argv(bwrap: str, uid: int, status_fd: int | None, filesystem: list[str], command: list[str],
                 limits: Limits = Limits()) -> list[str]:
    status = ["--json-status-fd", str(status_fd)] if status_fd is not None else []
    caps = [arg for cap in SETPRIV_CAPS for arg in ("--cap-add", cap)]
    return [*rlimit_args(limits),
            bwrap, "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
            "--die-with-parent", "--new-session", "--hostname", "sandbox", *caps, *status, *filesystem, "--",
            "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs",
            "--inh-caps=-all", "--bounding-set=-all", "--", *command]
