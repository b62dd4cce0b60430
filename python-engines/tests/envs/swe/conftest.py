import pytest

from rollflow_engines.envs.swe.env import SweEnv
from rollflow_engines.envs.swe.mining import projects as P

from .helpers import config
from .project import Built, build, make_venv
from .sample_tasks import CACHE


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> Built:
    """The tally project, its three instances and its prepared environment, built once (a few real pytest runs)."""
    return build(tmp_path_factory.mktemp("swe-project"))


@pytest.fixture
def envs(built):
    """make(instance_id): a swe env reset on that tally instance (seed 0), closed after the test."""
    made: list[SweEnv] = []

    def make(instance_id: str = "tally__tally-2") -> SweEnv:
        env = SweEnv()
        made.append(env)
        env.reset(0, config(built, instance_id))
        return env
    yield make
    for e in made:
        e.close()


@pytest.fixture(scope="session")
def inflection(tmp_path_factory):
    """inflection 0.5.1's sdist unpacked, with a prepared environment: (project, tree, python, root). The sdist comes
    from .cache/swe-mined/sdists, else is downloaded once from PyPI (15 kB, sha256 checked); neither is a failure."""
    project = next(p for p in P.load()[0] if p.name == "inflection")
    sdist = P.fetch(project, CACHE / "sdists")  # raises (the test fails) when it can neither find nor download it
    root = tmp_path_factory.mktemp("inflection")
    return project, P.unpack(sdist, root / "tree"), make_venv(root), root


@pytest.fixture(scope="session")
def inflection_images(inflection, tmp_path_factory) -> dict[str, dict]:
    """The inflection sample as one podman image per instance: instance_id -> its swe config (source kind image).
    Skipped, with podman's own words, where podman cannot run; the images are podman's to cache (a second session
    only checks its layers), the base root file system is built once into .state/swe-images (mmdebstrap)."""
    from rollflow_engines.envs.swe.image_build import podman_refusal
    from .image_sample import build_sample
    if (refusal := podman_refusal()) is not None:
        pytest.skip(reason=refusal)
    return build_sample(inflection, tmp_path_factory.mktemp("swe-images"))
