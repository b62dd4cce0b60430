"""The env role's settings (``--option key=value``, ``options:`` in a config): sessions, verifiers, the sandbox."""
from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ...edge import MiB, max_request_bytes_field
from ...liveness import stall_after_field
from ...envs import snapshots
from ...rewards import get_verifier, known_verifiers
from ...sandbox.settings import DEFAULT_MAX_AGE_S, DEFAULT_ROOT
from ...sandbox.workspace import DEFAULT_DISK_MB, DEFAULT_MAX_INODES

DEFAULT_DOMAINS = {"math": "math_verify", "exact": "exact_match", "code": "code_exec"}


class Options(BaseModel):
    model_config = ConfigDict(extra="forbid")

    backend: Literal["python"] = "python"
    session_ttl_s: float = Field(default=600.0, gt=0, description="A session idle this long (no reset/step) is closed.")
    max_sessions: int = Field(default=4096, ge=1, description="Open sessions at most; a /reset beyond it is refused with 429.")
    reward_timeout_s: float = Field(default=10.0, gt=0, le=3600, description="Longest one verification may run; past it the reward is 0 with info.timeout.")
    reward_workers: int = Field(default=2, ge=1, le=256, description="Verifier worker processes (verifications run in parallel).")
    reward_memory_mb: int | None = Field(default=4096, ge=256, description="Address-space cap of each verifier worker; null for none.")
    # A request carries one action or one response to score: text a model wrote.
    max_request_bytes: int = max_request_bytes_field(8 * MiB)
    # Only a finished request is progress, and one swe_lite step may grade for grading_timeout_s (120 s by default).
    stall_after_s: float = stall_after_field(180.0)
    domains: dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_DOMAINS),
                                    description="Sample domain -> verifier name; merged over the defaults math -> math_verify, exact -> exact_match, code -> code_exec.")
    sandbox: Literal["bwrap", "none"] = Field(default="bwrap", description="How model-written code runs (code_exec, sandboxed envs): bwrap, "
                                              "or none: UNSANDBOXED, for trusted code only, logged as a warning for every workspace.")
    sandbox_root: Path = Field(default=DEFAULT_ROOT, description="Directory of sandbox workspaces (<root>/<owner>/<id>); the janitor reaps orphans "
                                                                 "there when the server starts, periodically, and when it stops.")
    sandbox_disk_mb: int = Field(default=DEFAULT_DISK_MB, ge=1, le=1 << 20, description="Bytes (MiB) each workspace's /workspace and /tmp may "
                                 "hold together: its own tmpfs, in memory; past it writes fail with ENOSPC inside the sandbox.")
    sandbox_max_inodes: int = Field(default=DEFAULT_MAX_INODES, ge=16, le=1 << 30, description="Files and directories each workspace may "
                                    "hold; past it creating one fails with ENOSPC inside the sandbox.")
    sandbox_max_age_s: float = Field(default=DEFAULT_MAX_AGE_S, gt=0, description="The janitor removes a workspace older than this even if "
                                                                                  "a live server holds it (its processes are killed first).")
    snapshot_dir: str = Field(default=str(snapshots.DEFAULT_DIR), description="Where envs that resume episodes (swe_lite, swe) save "
                              "their snapshots: a directory, or s3://<bucket>/<prefix> (each snapshot the object <prefix>/<id>) for "
                              "servers on hosts that share no disk; env servers that share it resume each other's episodes.")
    action_log: Path | None = Field(default=None, description="A file the server appends one JSON line to per applied /step "
                                    "{session, env, index, action_sha256, reward, done, ts}, fsynced: the record that no action was applied twice. None: no log.")
    snapshot_max_age_s: float = Field(default=86_400.0, gt=0, description="The janitor removes a snapshot not written for this long (an "
                                                                           "episode nobody resumed); a run resuming later replays that episode from its start.")

    @field_validator("snapshot_dir")
    @classmethod
    def _snapshot_ref_well_formed(cls, snapshot_dir: str) -> str:
        snapshots.location(snapshot_dir)  # ObjectRefError is a ValueError: the option's error names the expected form
        return snapshot_dir

    @field_validator("domains")
    @classmethod
    def _known_verifiers(cls, domains: dict[str, str]) -> dict[str, str]:
        merged = {**DEFAULT_DOMAINS, **domains}
        for domain, name in merged.items():
            if get_verifier(name) is None:
                raise ValueError(f"domains.{domain}: unknown verifier {name!r}; known verifiers: {', '.join(known_verifiers())}")
        return merged
