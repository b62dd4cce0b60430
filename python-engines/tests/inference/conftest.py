import pytest


@pytest.fixture
def anyio_backend() -> str:
    # anyio's pytest plugin runs the async tests; asyncio is what the servers use.
    return "asyncio"
