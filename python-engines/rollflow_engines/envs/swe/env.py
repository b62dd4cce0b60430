"""The ``swe`` env: an SWE-bench-format instance (a real repository at its base state, an issue, tests) fixed by an
agent in a sandbox, graded by SWE-bench's rules (docs/swe-bench.md).

The episode is swe_lite's (SweLiteEnv: the same actions in xml or tool_calls, the same checks on paths and
edits, the same budgets, a sandbox failure answered 503 and changing nothing); what differs is the task, which
comes from a dataset file (instances.py) and a source (sources.py), and the grading (grading.py). The agent's
commands run with the instance's prepared environment first on PATH, bound read-only.

Episodes are not snapshotted (a real repository is past swe_lite's snapshot caps; durable workspaces for real
repositories are #25 item 6): a lost session is replayed from its recorded actions.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ...errors import RequestError
from ...sandbox import Limits, SandboxError, SandboxUnavailable, current
from ..base import BaseEnv
from ..registry import register_env
from ..swe_lite.env import EpisodeConfig, SweLiteEnv, _sandbox_failed
from .grading import Grade, grade
from .instances import Dataset, Fields, load_dataset, select
from .patches import PatchError, apply_test_patch
from .sources import LocalSource, resolve

MAX_LISTED = 40  # top-level entries of the repository named in the first observation


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
    source: LocalSource = Field(description="Where each instance's repository and prepared environment are (kind: local).")


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
        self.ws = None
        try:
            self.checkout, self.prepared = resolve(config.source, self.instance)
            self.ws = current().open()
            self._materialize(self.ws)
            # From the base tree before any command of the agent's ran in it. A test_patch that does not apply is the
            # dataset's fault (PatchError, a 400), found before the episode starts.
            self.tests = apply_test_patch(self.ws.path, self.instance.test_patch)
        except PatchError as e:
            self.ws.remove()
            self.ws = None
            raise RequestError("config.instances", f"instance {self.instance.instance_id}: {e}", self.instance.instance_id) from e
        except BaseException as e:
            if self.ws is not None:
                self.ws.remove()
                self.ws = None
            if isinstance(e, (SandboxError, SandboxUnavailable)):
                raise _sandbox_failed(e) from e
            raise
        top = sorted(p.name + ("/" if p.is_dir() else "") for p in self.ws.path.iterdir())
        listing = "  " + "  ".join(top[:MAX_LISTED]) + (f"  … ({len(top) - MAX_LISTED} more)" if len(top) > MAX_LISTED else "")
        return (f"Task {self.instance.instance_id} ({self.instance.repo}). Issue:\n{self.instance.problem_statement}\n\n"
                f"The repository is your working directory:\n{listing}\n\n"
                f"Fix the issue in the code; the repository's tests will check it when you submit.\n{self._format}")

    def _materialize(self, ws) -> None:
        try:
            self.checkout.materialize(ws.path)
        except OSError as e:  # the workspace's disk cap, an unreadable source: the server's side
            raise SandboxError(f"could not put {self.instance.instance_id}'s repository into a workspace: {e}") from e
        ws.adopt()

    def _run(self, command: str, limits: Limits):
        return self.ws.run(command, limits=limits, ro_binds=self.prepared.binds, path_first=self.prepared.path_first)

    def _grade(self) -> Grade:
        return grade(self.instance, self.checkout, self.prepared, self.tests, self.ws, self._grading_limits())

    def _save_snapshot(self) -> None:
        """None: see the module's doc."""

    # BaseEnv's: the server answers a restore request with a 400 (swe_lite's would load a snapshot this env never saves).
    restore = BaseEnv.restore

    def info(self) -> dict[str, Any]:
        g = self.grade_result
        return {"instance_id": self.instance.instance_id, "repo": self.instance.repo, "turn": self.turn, "invalid_actions": self.invalid,
                "sandbox_errors": self.sandbox_errors, "submitted": self.submitted,
                "fail_to_pass": [g.f2p_passed, g.f2p_total] if g else None, "pass_to_pass": [g.p2p_passed, g.p2p_total] if g else None,
                "tests_passed_fraction": g.fraction if g else None, "success": bool(g and g.resolved),
                "reward_tampered": bool(g and g.tampered), "workspace_over_limit": self.over_limit,
                "dataset_rows_malformed": len(self.dataset.problems)}
