import pytest

from rollflow_engines.envs.swe_lite.env import SweLiteEnv


@pytest.fixture
def env():
    """A swe_lite env, closed after the test (its workspace removed)."""
    e = SweLiteEnv()
    yield e
    e.close()
