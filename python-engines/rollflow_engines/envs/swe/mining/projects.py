"""The projects the miner reads (projects.json): their sdists, their trees, their prepared environments.

- ``fetch``: ``pip download --no-deps --no-binary NAME NAME==VERSION`` (pip's own client; the build backend pip
  needs to read the sdist's metadata comes as a wheel), then the sha256 checked against the pinned one.
- ``unpack``: the sdist's tree, normalized so that its package imports from the repository's root, as the swe
  grading needs (the repository is appended to sys.path, nothing is installed): a ``src/`` layout has the
  entries of ``src/`` moved up to the root (``src/cachetools`` becomes ``cachetools``; ``*.egg-info`` dropped).
  ``__pycache__`` and compiled files are left out.
- ``build_env``: a venv of the test requirements (registry wheels, ``--only-binary :all:``), never the project
  itself; checked by asking the venv's pip for the project's distribution name.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..sources import repo_slug

PROJECTS_FILE = Path(__file__).with_name("projects.json")
PIP_TIMEOUT_S = 600


@dataclass(frozen=True)
class Project:
    name: str
    version: str
    sha256: str
    requires: tuple[str, ...]
    split: str
    # (test file, pinned seconds) of projects.json's test_seconds: the only timing the keep rule reads (quick_files.py)
    test_seconds: tuple[tuple[str, float], ...] = ()

    @property
    def repo(self) -> str:
        return f"pypi/{self.name}"

    @property
    def slug(self) -> str:
        return repo_slug(self.repo)


def load(path: Path = PROJECTS_FILE) -> tuple[list[Project], list[str]]:
    """The projects and the test requirements every environment gets."""
    data = json.loads(path.read_text())
    projects = [Project(p["name"], p["version"], p["sha256"], tuple(p["requires"]), p["split"],
                        tuple(sorted(p.get("test_seconds", {}).items()))) for p in data["projects"]]
    return projects, list(data["test_requirements"])


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fetch(project: Project, into: Path) -> Path:
    """The project's sdist, downloaded once; ValueError if its sha256 is not the pinned one."""
    into.mkdir(parents=True, exist_ok=True)
    found = [p for p in into.glob("*.tar.gz") if p.name.lower().replace("_", "-").startswith(f"{project.name.lower()}-{project.version}.tar")]
    if not found:
        with tempfile.TemporaryDirectory(dir=into) as tmp:
            subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
                            "--no-binary", project.name, "-d", tmp, f"{project.name}=={project.version}"],
                           check=True, timeout=PIP_TIMEOUT_S)
            got = list(Path(tmp).iterdir())
            if len(got) != 1 or not got[0].name.endswith(".tar.gz"):
                raise ValueError(f"{project.name}: pip download gave {[g.name for g in got]}, expected one .tar.gz sdist")
            found = [got[0].rename(into / got[0].name)]
    if (digest := sha256(found[0])) != project.sha256:
        raise ValueError(f"{found[0]}: sha256 {digest}, pinned {project.sha256}")
    return found[0]


def unpack(sdist: Path, dest: Path) -> Path:
    """The sdist's tree at ``dest`` (its top-level directory stripped), src/ layout normalized (module docstring)."""
    if dest.exists():
        shutil.rmtree(dest)
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        with tarfile.open(sdist) as tar:
            tar.extractall(tmp, filter="data")
        (top,) = Path(tmp).iterdir()
        src = top / "src"
        if src.is_dir() and not (src / "__init__.py").exists():
            for entry in sorted(src.iterdir()):
                if entry.name.endswith(".egg-info"):
                    continue
                if (top / entry.name).exists():
                    raise ValueError(f"{sdist.name}: src/{entry.name} would replace the root's {entry.name}")
                entry.rename(top / entry.name)
            shutil.rmtree(src)
        for junk in [*top.rglob("__pycache__"), *top.rglob("*.pyc")]:
            if junk.is_dir():
                shutil.rmtree(junk, ignore_errors=True)
            elif junk.exists():
                junk.unlink()
        top.rename(dest)
    return dest


def merged(common: list[str], own: tuple[str, ...]) -> list[str]:
    """The common test requirements, a project's own pin of the same name replacing the common one (boltons' conftest
    needs a pytest older than 8)."""
    by_name = {r.split("==")[0].lower(): r for r in common}
    by_name.update({r.split("==")[0].lower(): r for r in own})
    return list(by_name.values())


def build_env(project: Project, common: list[str], dest: Path) -> str:
    """The project's prepared environment (a venv with pytest and its test requirements, not the project); its python."""
    python = dest / "bin" / "python"
    done = dest / ".rollflow-requirements"
    requirements = merged(common, project.requires)
    wanted = "\n".join(requirements) + "\n"
    if python.exists() and done.is_file() and done.read_text() == wanted:
        return str(python)
    if dest.exists():
        shutil.rmtree(dest)
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(dest)], check=True, timeout=PIP_TIMEOUT_S)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--only-binary", ":all:",
                    *requirements], check=True, timeout=PIP_TIMEOUT_S)
    shown = subprocess.run([str(python), "-m", "pip", "show", "--quiet", project.name], capture_output=True, timeout=PIP_TIMEOUT_S)
    if shown.returncode == 0:  # the grading would test the installed copy instead of the repository
        raise ValueError(f"{project.name}'s environment holds {project.name} itself (pulled in by {project.requires})")
    done.write_text(wanted)
    return str(python)
