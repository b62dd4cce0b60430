from pathlib import Path

import pytest

from rollflow_engines.envs import snapshots
from rollflow_engines.sandbox import SandboxSettings, configure, current

from .project import Built, build


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> Built:
    """The tally project, its three instances and its prepared environment, built once (a few real pytest runs)."""
    return build(tmp_path_factory.mktemp("swe-project"))


@pytest.fixture(autouse=True)
def sandbox_root(tmp_path: Path):
    """Every workspace of these tests lives under the test's own directory."""
    before = current()
    configure(SandboxSettings(root=tmp_path / "sandboxes"))
    snapshots.configure(tmp_path / "snapshots")
    yield tmp_path / "sandboxes"
    configure(before)
    snapshots.configure(snapshots.DEFAULT_DIR)
