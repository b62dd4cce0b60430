"""The ``swe`` env: an SWE-bench-format instance (a real repository at its base state, an issue, tests) fixed by an
agent in a sandbox, graded by SWE-bench's rules (docs/swe-bench.md).

The episode is swe_lite's (SweLiteEnv: the same actions in xml or tool_calls, the same checks on paths and
edits, the same budgets, a sandbox failure answered 503 and changing nothing); what differs is the task, which
comes from a dataset file (instances.py) and a source (sources.py), and the grading (grading.py). The agent's
commands run with the instance's prepared environment first on PATH, bound read-only.

Durable episodes: after each step that runs a command, the env saves a snapshot, as swe_lite does,
but incremental and content-addressed (workspace_manifest.py): a manifest of what differs from the reset state,
the contents as shared blobs, only what changed since the last step hashed and written. A client that lost the
session resets with ``restore`` (on_env_loss replay: from the latest snapshot, then the actions after it), and the
env puts the repository together from its source and applies the manifest, running no command again.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from ...errors import NotFoundError, RequestError
from ...sandbox import Limits, SandboxError, SandboxUnavailable, current
from ..registry import register_env
from ..swe_lite.env import EpisodeConfig, SweLiteEnv, _sandbox_failed
from .brief import brief_observation
from .grading import Grade, grade
from .instances import Dataset, Fields, load_dataset, select
from .patches import PatchError, apply_test_patch
from .images import ImageSource, resolve_image
from .sources import LocalSource, resolve
from .workspace_manifest import WorkspaceManifest

MAX_LISTED = 40  # top-level entries of the repository named in the first observation
SOURCES = {"local": (LocalSource, resolve), "image": (ImageSource, resolve_image)}


class SweConfig(EpisodeConfig):
    instances: str = Field(min_length=1, description="The dataset: a JSON-lines or parquet file of SWE-bench-format instances.")
    format: Literal["auto", "jsonl", "parquet"] = Field(default="auto", description="How the file is read; auto: parquet for a .parquet path, "
                                                                                    "JSON lines otherwise.")
    fields: Fields = Field(default_factory=Fields, description="The column of each field where a dataset names them otherwise than "
                                                               "SWE-bench (instance_id, repo, base_commit, problem_statement, patch, "
                                                               "test_patch, FAIL_TO_PASS, PASS_TO_PASS, split).")
    split: str | None = Field(default=None, min_length=1, description="Only rows whose split column (fields.split) holds this value.")
    ids: list[str] | None = Field(default=None, min_length=1, description="The instance ids the seed walks, in this order, instead of "
                                                                          "every row (of the split).")
    source: LocalSource | ImageSource = Field(description="Where each instance's repository and prepared environment are: kind local "
                                                          "(paths on this machine, the default) or image (a container image per instance).")

    @field_validator("source", mode="before")
    @classmethod
    def _source_by_kind(cls, value):
        """Validated as the model its ``kind`` names, so an error names ``source.<key>``, not the union's branches."""
        if not isinstance(value, dict):
            return value
        kind = value.get("kind", "local")
        if kind not in SOURCES:
            raise ValidationError.from_exception_data("source", [InitErrorDetails(
                type=PydanticCustomError("source_kind", "expected one of {kinds}", {"kinds": ", ".join(SOURCES)}), loc=("kind",), input=kind)])
        return SOURCES[kind][0].model_validate(value)


@register_env
class SweEnv(SweLiteEnv):
    name = "swe"
    Config = SweConfig
    description = "Fix an issue in a real repository from an SWE-bench-format dataset (bash, view, edit, submit); its tests decide."
    on_env_loss = "replay"

    def reset(self, seed: int, config: SweConfig) -> str:
        self.config = config
        try:
            dataset: Dataset = load_dataset(config.instances, config.format, config.fields, config.split is not None)
        except OSError as e:
            raise RequestError("config.instances", f"cannot read {config.instances!r}: {e}", config.instances) from e
        try:
            chosen = select(dataset, config.split, config.ids)
        except ValueError as e:
            raise RequestError("config.ids", str(e), config.ids) from e
        if not chosen:
            shown = "; ".join(map(str, dataset.problems[:5]))
            raise RequestError("config.instances", f"{config.instances!r} has no readable instance" + (f" in split {config.split!r}" if config.split else "")
                               + f" ({len(dataset.instances)} readable rows, {len(dataset.problems)} malformed" + (f": {shown}" if shown else "") + ")",
                               config.instances)
        self.dataset, self.instance = dataset, chosen[seed % len(chosen)]
        self._begin_episode()
        self._release_checkout()
        self._close_manifest()
        self.ws = None
        try:
            self.checkout, self.prepared = SOURCES[config.source.kind][1](config.source, self.instance)
            self.ws = current().open()
            self._materialize(self.ws)
            self.manifest = WorkspaceManifest(self.ws.path, self.ws.uid)
            self.manifest.record_reset()
            # From the base tree before any command of the agent's ran in it. A test_patch that does not apply is the
            # dataset's fault (PatchError, a 400), found before the episode starts.
            self.tests = apply_test_patch(self.ws.path, self.instance.test_patch)
        except PatchError as e:
            self.ws.remove()
            self.ws = None
            self._release_checkout()
            raise RequestError("config.instances", f"instance {self.instance.instance_id}: {e}", self.instance.instance_id) from e
        except BaseException as e:
            if self.ws is not None:
                self.ws.remove()
                self.ws = None
            self._release_checkout()
            if isinstance(e, (SandboxError, SandboxUnavailable)):
                raise _sandbox_failed(e) from e
            raise
        if config.brief:
            return brief_observation(self.instance, config.actions)
        top = sorted(p.name + ("/" if p.is_dir() else "") for p in self.ws.path.iterdir())
        listing = "  " + "  ".join(top[:MAX_LISTED]) + (f"  … ({len(top) - MAX_LISTED} more)" if len(top) > MAX_LISTED else "")
        return (f"Task {self.instance.instance_id} ({self.instance.repo}). Issue:\n{self.instance.problem_statement}\n\n"
                f"The repository is your working directory:\n{listing}\n\n"
                f"Fix the issue in the code; the repository's tests will check it when you submit.\n{self._format}")

    def close(self) -> None:
        super().close()
        self._release_checkout()
        self._close_manifest()

    def _close_manifest(self) -> None:
        """Drops the last episode's watches (its workspace is going)."""
        if getattr(self, "manifest", None) is not None:
            self.manifest.close()
            self.manifest = None

    def _release_checkout(self) -> None:
        """Lets the episode's image leave the cache (a local checkout holds nothing)."""
        if getattr(self, "checkout", None) is not None:
            self.checkout.release()
            self.checkout = None

    def _materialize(self, ws) -> None:
        try:
            self.checkout.materialize(ws.path)
        except OSError as e:  # the workspace's disk cap, an unreadable source: the server's side
            raise SandboxError(f"could not put {self.instance.instance_id}'s repository into a workspace: {e}") from e
        ws.adopt()

    def _run(self, command: str, limits: Limits):
        return self.ws.run(command, limits=limits, ro_binds=self.prepared.binds, path_first=self.prepared.path_first,
                           system_root=self.prepared.system_root)

    def _grade(self) -> Grade:
        return grade(self.instance, self.checkout, self.prepared, self.tests, self.ws, self._grading_limits())

    @property
    def _episode_id(self) -> str:
        return self.instance.instance_id

    def _save_snapshot(self) -> str:
        """swe_lite's, incremental: the whole workspace looked at, hashing only what changed since the last walk (an
        edit since then included). WorkspaceOverLimit past the walk's caps ends the episode."""
        self.manifest.rescan()
        return self.manifest.save(self.instance.instance_id, self._counters())

    def _remove_snapshot(self, snapshot: str | None) -> None:
        self.manifest.discard(snapshot)  # its blobs stay: the new manifest names those still needed (reap_blobs sweeps)

    def restore(self, snapshot: dict[str, Any]) -> None:
        """The reset state is in place (reset ran with the episode's seed and config): apply the manifest over it."""
        if snapshot.get("reset"):  # a reference to the reset state (snapshots.RESET): nothing to apply but the counters
            if set(snapshot["counters"]) != set(self._counters()):
                raise NotFoundError("restore", f"a reference to the reset state names the counters {sorted(snapshot['counters'])}, "
                                    f"not this env's {sorted(self._counters())}", sorted(snapshot["counters"]))
            self._restore_counters(snapshot["counters"])
            return
        if snapshot.get("instance") != self.instance.instance_id:
            raise ValueError(f"the snapshot is of instance {snapshot.get('instance')!r}, not of this episode's {self.instance.instance_id!r}")
        self.manifest.restore(snapshot.get("changes"), snapshot.get("carried") or {})
        self._restore_counters(snapshot["counters"])

    def info(self) -> dict[str, Any]:
        g = self.grade_result
        return {"instance_id": self.instance.instance_id, "repo": self.instance.repo, "turn": self.turn, "invalid_actions": self.invalid,
                "sandbox_errors": self.sandbox_errors, "submitted": self.submitted,
                "fail_to_pass": [g.f2p_passed, g.f2p_total] if g else None, "pass_to_pass": [g.p2p_passed, g.p2p_total] if g else None,
                "tests_passed_fraction": g.fraction if g else None, "success": bool(g and g.resolved),
                "reward_tampered": bool(g and g.tampered), "workspace_over_limit": self.over_limit,
                "dataset_rows_malformed": len(self.dataset.problems)}
