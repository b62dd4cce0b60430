"""rlimits, the wall clock and the output cap, each shown holding."""
import signal
import threading

from rollflow_engines.sandbox import Limits, SandboxError, open_workspace
from rollflow_engines.sandbox.limits import OUTPUT_MARKER

from .helpers import uid_processes, wait_for

FORK_UNTIL_REFUSED = """
import os, sys, time
children = 0
while True:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(1000)
        os._exit(0)
    children += 1
open("saturated", "w").write(str(children))
time.sleep(1000)
"""


def test_a_busy_loop_is_stopped_by_the_cpu_limit(workspace):
    r = workspace.run("while :; do :; done", limits=Limits(cpu_s=1, wall_s=60))
    assert not r.timed_out and r.exit_code is None
    assert r.signal in (signal.SIGXCPU, signal.SIGKILL)


def test_a_memory_hog_fails(workspace):
    r = workspace.run(["python", "-c", "x = bytearray(2 << 30); print('allocated')"], limits=Limits(memory_mb=256))
    assert r.exit_code == 1 and "MemoryError" in r.stderr and "allocated" not in r.stdout, r


def test_a_huge_file_write_stops_at_the_file_size_limit(workspace):
    r = workspace.run("head -c 5000000 /dev/zero > big", limits=Limits(max_file_mb=1))
    assert r.signal == signal.SIGXFSZ or r.exit_code != 0, r
    assert (workspace.path / "big").stat().st_size == 1 << 20


def test_output_is_capped_with_the_marker(workspace):
    r = workspace.run("yes", limits=Limits(wall_s=2, output_bytes=1000))
    assert r.truncated and r.timed_out
    kept, marker = r.stdout[:1000], r.stdout[1000:]
    assert kept == "y\n" * 500
    total = int(marker.split("output truncated: ")[1].split(" bytes")[0])
    assert total > 1000 and marker == OUTPUT_MARKER.format(total=total, kept=1000)


def test_stderr_is_capped_on_its_own_and_bad_utf8_is_replaced(workspace):
    r = workspace.run(["python", "-c", "import sys; sys.stdout.buffer.write(b'\\xff ok'); sys.stderr.write('e' * 5000)"],
                      limits=Limits(output_bytes=100))
    assert r.stdout == "\ufffd ok" and r.stderr.startswith("e" * 100 + "\n[... output truncated: 5000 bytes")


def test_stdin_reaches_the_command(workspace):
    big = "".join(f"{i}\n" for i in range(100_000))  # more than a pipe holds: written while output is read
    r = workspace.run("wc -l; echo done", stdin=big)
    assert r.stdout == "100000\ndone\n"


def test_sleep_is_killed_at_the_wall_clock_with_its_whole_tree(workspace):
    r = workspace.run("sleep 1000 & sleep 1000 & (sleep 1000 &) ; sleep 1000", limits=Limits(wall_s=1))
    assert r.timed_out and r.exit_code is None and r.signal == signal.SIGKILL
    assert uid_processes(workspace.uid) == []


def test_background_processes_end_with_their_run(workspace):
    r = workspace.run("sleep 1000 & setsid sleep 1000 & nohup sleep 1000 >/dev/null 2>&1 & echo started")
    assert r.exit_code == 0 and r.stdout == "started\n" and not r.timed_out
    assert uid_processes(workspace.uid) == []


def test_a_fork_bomb_is_contained(workspace):
    # dash has no ":" functions; the bomb runs beside the command for a while, then the run ends. The main shell
    # forks once, for the bomb's subshell, before any slot is taken, and then waits with a loop of builtins:
    # forking the pipeline itself, or a `sleep`, would race the bomb for the same process slots.
    r = workspace.run("(bomb() { bomb | bomb & }; bomb); i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; echo survived",
                      limits=Limits(wall_s=30, max_procs=32))
    assert r.stdout == "survived\n" and "Cannot fork" in r.stderr and not r.timed_out, r
    assert uid_processes(workspace.uid) == []
    assert workspace.run("echo still fine").stdout == "still fine\n"


def test_the_process_cap_holds_per_sandbox_while_another_runs(root):
    """A saturates its cap; B, running meanwhile, still starts processes: caps are per sandbox, not shared."""
    with open_workspace(root, "tests", files={"bomb.py": FORK_UNTIL_REFUSED}) as a, open_workspace(root, "tests") as b:
        raised = []

        def bomb():
            try:
                a.run("python bomb.py", limits=Limits(max_procs=20, wall_s=120))
            except SandboxError as e:
                raised.append(e)
        t = threading.Thread(target=bomb)
        t.start()
        try:
            children = int(wait_for(lambda: (a.path / "saturated").exists() and (a.path / "saturated").read_text(), "A saturated"))
            live = len(uid_processes(a.uid))
            assert children < 20 and live <= 20, (children, live)
            r = b.run("for i in 1 2 3 4 5 6 7 8; do sleep 0.01 & done; wait; echo ok", limits=Limits(max_procs=20))
            assert r.stdout == "ok\n", r
        finally:
            a.remove()  # stops A's run, which reports the removal
            t.join()
    assert uid_processes(a.uid) == [] and len(raised) == 1
