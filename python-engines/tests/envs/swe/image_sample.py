"""The checked-in inflection sample (sample_tasks.py) as container images, for the tests of source kind image: one
image per instance (envs/swe/image_build.py, under its own namespace so that it never replaces the images built
from .cache/swe-mined), whose environment holds pytest alone, copied from the test runner's site-packages."""
from __future__ import annotations

import importlib.metadata
import shutil
import sys
from pathlib import Path

from packaging.requirements import Requirement

from rollflow_engines.envs.swe import image_build

from .sample_tasks import ROWS, episode_config

NAMESPACE = "localhost/rollflow-swe-test"
IMAGE = NAMESPACE + "/{repo_slug}:{instance_id}"


def requirements(name: str) -> set[str]:
    """``name`` and the distributions it requires here, transitively (markers evaluated, no extras)."""
    found, todo = set(), [name]
    while todo:
        dist = importlib.metadata.distribution(todo.pop())
        if (key := dist.metadata["Name"].lower()) in found:
            continue
        found.add(key)
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return found


def pytest_venv(dest: Path) -> Path:
    """A venv-shaped directory (what image_build reads: lib/pythonX.Y/site-packages) holding pytest and what it needs."""
    site = dest / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    for name in sorted(requirements("pytest")):
        dist = importlib.metadata.distribution(name)
        for file in dist.files or []:
            source = Path(dist.locate_file(file))
            if source.is_file() and not str(file).startswith(".."):  # console scripts live outside site-packages
                (site / file).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, site / file)
    return dest


def build_sample(inflection, root: Path) -> dict[str, dict]:
    """Each sampled instance's image built, and its swe config (source kind image, unpacked under ``root``)."""
    for row in ROWS:
        (root / row["instance_id"]).mkdir()
    configs = {row["instance_id"]: episode_config(inflection, row, root / row["instance_id"]) for row in ROWS}
    image_build.build(ROWS, f"{root}/{{instance_id}}/repos/{{instance_id}}.tar.gz", str(pytest_venv(root / "env")), namespace=NAMESPACE)
    source = {"kind": "image", "image": IMAGE, "cache_dir": str(root / "rootfs")}
    return {instance_id: {**config, "source": source} for instance_id, config in configs.items()}
