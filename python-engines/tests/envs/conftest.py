from pathlib import Path

import pytest

from rollflow_engines.envs import snapshots
from rollflow_engines.sandbox import SandboxSettings, configure, current


@pytest.fixture(autouse=True)
def sandbox_root(tmp_path: Path):
    """Every workspace and snapshot of the env tests (swe_lite, swe) lives under the test's own directory."""
    before = current()
    configure(SandboxSettings(root=tmp_path / "sandboxes"))
    snapshots.configure(tmp_path / "snapshots")
    yield tmp_path / "sandboxes"
    configure(before)
    snapshots.configure(snapshots.DEFAULT_DIR)
