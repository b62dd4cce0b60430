"""The sandbox's two failures. Neither is ever the sandboxed program's fault: callers report them as
infrastructure (the env role answers 503), never as a score."""
from __future__ import annotations


class SandboxUnavailable(Exception):
    """This machine cannot sandbox (no bwrap, no setpriv, no user namespaces); the message names what is missing."""


class SandboxError(Exception):
    """The sandbox itself failed (bwrap refused to start, the workspace is gone, a process would not die)."""
