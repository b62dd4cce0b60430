from pathlib import Path

import pytest

from rollflow_engines.sandbox import SandboxSettings, configure, current


@pytest.fixture(autouse=True)
def sandbox_root(tmp_path: Path):
    """Every workspace of these tests lives under the test's own directory, and is gone after it."""
    before = current()
    configure(SandboxSettings(root=tmp_path / "sandboxes"))
    yield tmp_path / "sandboxes"
    configure(before)
