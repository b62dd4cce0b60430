"""Drive a started command: feed its stdin, keep a capped prefix of stdout and stderr, enforce wall time.

Output past the cap is read and dropped (not left in the pipe), so a chatty command is not stalled
into a timeout; it still ends by its own exit, its CPU limit or the wall clock.
"""
from __future__ import annotations

import os
import selectors
import subprocess
import time
from typing import Callable

from .limits import OUTPUT_MARKER

_CHUNK = 65536
_DRAIN_AFTER_KILL_S = 10.0  # a killed sandbox closes its pipes at once; this only guards against a hang


class CappedBuffer:
    def __init__(self, cap: int):
        self.cap, self.kept, self.total = cap, bytearray(), 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.cap - len(self.kept)
        if room > 0:
            self.kept += data[:room]

    @property
    def truncated(self) -> bool:
        return self.total > len(self.kept)

    def text(self) -> str:
        text = self.kept.decode("utf-8", errors="replace")
        return text + OUTPUT_MARKER.format(total=self.total, kept=len(self.kept)) if self.truncated else text


def pump(proc: subprocess.Popen, stdin: bytes | None, wall_s: float, cap: int,
         kill: Callable[[], None]) -> tuple[CappedBuffer, CappedBuffer, bool]:
    """Run ``proc`` to the end of its output; after ``wall_s`` call ``kill``. Returns (stdout, stderr, timed_out).

    Any exception here (the calling thread interrupted, say) kills the command before it propagates."""
    out, err = CappedBuffer(cap), CappedBuffer(cap)
    buffers = {proc.stdout: out, proc.stderr: err}
    deadline = time.monotonic() + wall_s
    timed_out = False
    pending = memoryview(stdin or b"")
    try:
        with selectors.DefaultSelector() as sel:
            for stream in buffers:
                sel.register(stream, selectors.EVENT_READ)
            if proc.stdin is not None:
                if pending:
                    os.set_blocking(proc.stdin.fileno(), False)
                    sel.register(proc.stdin, selectors.EVENT_WRITE)
                else:
                    proc.stdin.close()
            while sel.get_map():
                left = deadline - time.monotonic()
                if left <= 0 and not timed_out:
                    timed_out = True
                    kill()  # the pipes close as the sandbox dies; keep draining to EOF
                    deadline += _DRAIN_AFTER_KILL_S
                    left = _DRAIN_AFTER_KILL_S
                elif left <= 0:
                    break  # something outside the sandbox's reach holds its pipes (mode none): stop reading
                for key, _ in sel.select(timeout=left):
                    if key.fileobj is proc.stdin:
                        pending = _feed(proc, sel, pending)
                        continue
                    data = os.read(key.fd, _CHUNK)
                    if data:
                        buffers[key.fileobj].add(data)
                    else:
                        sel.unregister(key.fileobj)
        proc.wait()
    except BaseException:
        kill()
        proc.wait()
        raise
    finally:
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    return out, err, timed_out


def _feed(proc: subprocess.Popen, sel: selectors.BaseSelector, pending: memoryview) -> memoryview:
    assert proc.stdin is not None
    try:
        pending = pending[os.write(proc.stdin.fileno(), pending[:_CHUNK]):]
    except BrokenPipeError:  # the command stopped reading: the rest of its input is not needed
        pending = pending[:0]
    if not pending:
        sel.unregister(proc.stdin)
        proc.stdin.close()
    return pending
