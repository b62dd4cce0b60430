import pytest

from .project import Built, build


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> Built:
    """The tally project, its three instances and its prepared environment, built once (a few real pytest runs)."""
    return build(tmp_path_factory.mktemp("swe-project"))
