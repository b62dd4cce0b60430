import pytest

from rollflow_engines.envs.swe.mining import projects as P

from .project import Built, build, make_venv
from .sample_tasks import CACHE


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> Built:
    """The tally project, its three instances and its prepared environment, built once (a few real pytest runs)."""
    return build(tmp_path_factory.mktemp("swe-project"))


@pytest.fixture(scope="session")
def inflection(tmp_path_factory):
    """inflection 0.5.1's sdist unpacked, with a prepared environment: (project, tree, python, root). The sdist comes
    from .cache/swe-mined/sdists, else is downloaded once from PyPI (15 kB, sha256 checked); neither is a failure."""
    project = next(p for p in P.load()[0] if p.name == "inflection")
    sdist = P.fetch(project, CACHE / "sdists")  # raises (the test fails) when it can neither find nor download it
    root = tmp_path_factory.mktemp("inflection")
    return project, P.unpack(sdist, root / "tree"), make_venv(root), root
