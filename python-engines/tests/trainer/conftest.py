import pytest


@pytest.fixture
def anyio_backend() -> str:
    # anyio's pytest plugin runs the async tests; asyncio is what the servers use.
    return "asyncio"


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory):
    """One directory of tiny models for the whole session (each is built once)."""
    return tmp_path_factory.mktemp("trainer-models")
