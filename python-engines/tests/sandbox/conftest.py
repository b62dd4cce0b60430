from pathlib import Path

import pytest

from rollflow_engines.sandbox import open_workspace


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "sandboxes"


@pytest.fixture
def workspace(root):
    with open_workspace(root, "tests") as ws:
        yield ws
