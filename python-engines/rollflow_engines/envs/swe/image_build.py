"""Container images for SWE-bench-format instances from a local dataset (the miner's layout, docs/swe-mining.md), so
that ``source.kind: image`` (images.py) can be served and tested on a machine that reaches no image registry.

    python -m rollflow_engines.envs.swe.image_build --mined .cache/swe-mined [--ids A B | --split S] [--limit N]

Three layers, built with podman, none with a RUN step (nothing runs inside a container while building):

- ``localhost/rollflow-swe-base:bookworm``: Debian bookworm from mmdebstrap (its own mirror, no registry), the
  essential packages plus python3 (3.11, as the host's venvs) and git (the agent's ``git apply``); the tarball is
  cached under the state directory, keyed by the package list, and imported once;
- ``localhost/rollflow-swe-env/<repo_slug>``: the project's prepared environment at /opt/env, a venv whose
  site-packages are the host venv's (pure-Python wheels) and whose interpreter is the image's python3;
- ``localhost/rollflow-swe/<repo_slug>:<instance_id>`` (lower-cased): the repository at its base state at /testbed.

podman's own layer cache makes a second run of an unchanged instance a no-op. Its storage must be overlay: with vfs
every image is a full copy (``podman_refusal``).
"""
from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from .sources import Checkout, find_repository, repo_slug

PACKAGES = "python3,git"  # beside Debian's essential set (which has dash and util-linux's setpriv, what the sandbox runs)
SUITE, MIRROR, PYTHON = "bookworm", "http://deb.debian.org/debian", "python3.11"
BASE = f"localhost/rollflow-swe-base:{SUITE}"
NAMESPACE = "localhost/rollflow-swe"  # the tests build theirs under another, so the two never replace each other's
DEFAULT_STATE = Path(__file__).resolve().parents[4] / ".state" / "swe-images"


def image_name(repo: str, instance_id: str, namespace: str = NAMESPACE) -> str:
    """The per-instance tag, as ``source.image: localhost/rollflow-swe/{repo_slug}:{instance_id}`` names it."""
    return f"{namespace}/{repo_slug(repo)}:{instance_id}".lower()


def podman(*args: str) -> str:
    done = subprocess.run(["podman", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"podman {' '.join(args[:3])} failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    return done.stdout.strip()


def podman_refusal() -> str | None:
    """None when podman can build here, else its own words: it cannot start, or its storage is not overlay (with vfs
    every image would be a full copy: 263 of them fill a disk)."""
    try:
        done = subprocess.run(["podman", "info", "--format", "{{.Store.GraphDriverName}}"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"podman cannot run here: {e}"
    if done.returncode != 0:
        return f"podman info failed (exit {done.returncode}): {done.stderr.strip()[-1000:]}"
    if (driver := done.stdout.strip()) != "overlay":
        return f"podman's storage driver is {driver!r}, not overlay (/etc/containers/storage.conf, driver = \"overlay\")"
    return None


def ensure_base(state: Path) -> str:
    """The base image, built with mmdebstrap the first time (about 80 s and 250 MB here), imported once."""
    key = hashlib.sha256(f"{SUITE} {PACKAGES}".encode()).hexdigest()[:12]
    if podman("image", "ls", "--filter", f"reference={BASE}", "--filter", f"label=rollflow.rootfs={key}", "--format", "{{.Id}}"):
        return BASE
    tarball = state / f"rootfs-{SUITE}-{key}.tar"
    if not tarball.is_file():
        state.mkdir(parents=True, exist_ok=True)
        partial = tarball.with_name(tarball.stem + "-part.tar")  # mmdebstrap picks the format from the .tar suffix
        t0 = time.monotonic()
        done = subprocess.run(["mmdebstrap", "--variant=essential", f"--include={PACKAGES}", SUITE, str(partial), MIRROR],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"mmdebstrap failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
        partial.rename(tarball)
        print(f"swe images: base root file system built in {time.monotonic() - t0:.0f} s: {tarball}", file=sys.stderr)
    podman("import", "--change", f"LABEL rollflow.rootfs={key}", "--change", 'CMD ["/bin/sh"]', str(tarball), BASE)
    return BASE


def _context(state: Path, name: str) -> Path:
    ctx = state / "ctx" / name
    shutil.rmtree(ctx, ignore_errors=True)
    ctx.mkdir(parents=True)
    return ctx


def _build(ctx: Path, containerfile: str, tag: str) -> None:
    (ctx / "Containerfile").write_text(containerfile)
    podman("build", "-q", "-f", str(ctx / "Containerfile"), "-t", tag, str(ctx))


def ensure_env(state: Path, slug: str, venv: Path, namespace: str = NAMESPACE) -> str:
    """The project's environment layer: ``venv``'s site-packages at /opt/env, run by the image's python3."""
    site = venv / "lib" / PYTHON / "site-packages"
    if not site.is_dir():
        found = sorted(p.name for p in (venv / "lib").glob("python*"))
        raise RuntimeError(f"{venv} has no lib/{PYTHON}/site-packages (it has {found}): the base image's python is {PYTHON}")
    ctx = _context(state, f"env-{slug}")
    env = ctx / "env"
    shutil.copytree(site, env / "lib" / PYTHON / "site-packages", copy_function=_link_or_copy, symlinks=True)
    (env / "bin").mkdir()
    for name in ("python", "python3", PYTHON):
        (env / "bin" / name).symlink_to(f"/usr/bin/{PYTHON}")
    (env / "lib64").symlink_to("lib")
    (env / "pyvenv.cfg").write_text(f"home = /usr/bin\ninclude-system-site-packages = false\nversion = {PYTHON[6:]}\n")
    tag = f"{namespace}-env/{slug}:latest".lower()
    _build(ctx, f"FROM {BASE}\nLABEL rollflow.swe.env={slug}\nCOPY env /opt/env\n", tag)
    return tag


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)  # the context only has to be read once
    except OSError:
        shutil.copy2(src, dst)


def build_instance(state: Path, row: dict, env_tag: str, repo: Path, namespace: str = NAMESPACE) -> str:
    """The instance's image: ``repo`` (a directory or a tarball, as source kind local reads it) at /testbed."""
    ctx = _context(state, f"instance-{row['instance_id']}")
    (ctx / "testbed").mkdir()
    Checkout(repo).materialize(ctx / "testbed")
    tag = image_name(row["repo"], row["instance_id"], namespace)
    _build(ctx, f"FROM {env_tag}\nLABEL rollflow.swe.instance={row['instance_id']}\nCOPY testbed /testbed\n", tag)
    shutil.rmtree(ctx)
    return tag


def build(rows: list[dict], repo_path: str, env_path: str, state: Path = DEFAULT_STATE, namespace: str = NAMESPACE) -> dict[str, str]:
    """An image per row: ``repo_path`` and ``env_path`` are templates over {instance_id} and {repo_slug} (the repository
    as source kind local names it; the venv's root directory). Returns instance_id -> image."""
    if (refusal := podman_refusal()) is not None:
        raise RuntimeError(refusal)
    state.mkdir(parents=True, exist_ok=True)
    with open(state / ".build.lock", "w") as lock:
        # Builds sharing a state directory (its base tarball, its build contexts, the same tags) run one after the
        # other: two at once (two test processes, two shells) would remove each other's contexts.
        fcntl.flock(lock, fcntl.LOCK_EX)
        ensure_base(state)
        envs: dict[str, str] = {}
        images = {}
        for row in rows:
            slug = repo_slug(row["repo"])
            if slug not in envs:
                envs[slug] = ensure_env(state, slug, Path(env_path.format(repo_slug=slug)), namespace)
            named = Path(repo_path.format(instance_id=row["instance_id"], repo_slug=slug))
            repo = find_repository(named)
            if repo is None:
                raise RuntimeError(f"{row['instance_id']}: no repository at {named} (nor with a .tar/.tar.gz/.tgz suffix)")
            images[row["instance_id"]] = build_instance(state, row, envs[slug], repo, namespace)
        return images


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Build one podman image per mined SWE instance (source kind image).")
    ap.add_argument("--mined", type=Path, default=Path(".cache/swe-mined"), help="the miner's output (instances.jsonl, repos/, envs/)")
    ap.add_argument("--ids", nargs="*", help="only these instance ids")
    ap.add_argument("--split", help="only rows of this split")
    ap.add_argument("--limit", type=int, help="at most this many (in the file's order, after --ids/--split)")
    ap.add_argument("--state", type=Path, default=DEFAULT_STATE, help="the base tarball and build contexts")
    args = ap.parse_args(argv)
    rows = [json.loads(line) for line in (args.mined / "instances.jsonl").read_text().splitlines() if line.strip()]
    rows = [r for r in rows if (not args.ids or r["instance_id"] in args.ids) and (not args.split or r.get("split") == args.split)]
    rows = rows[:args.limit] if args.limit else rows
    t0 = time.monotonic()
    images = build(rows, f"{args.mined.absolute()}/repos/{{instance_id}}", f"{args.mined.absolute()}/envs/{{repo_slug}}", args.state)
    for instance_id, image in images.items():
        print(f"{instance_id}\t{image}")
    print(f"swe images: {len(images)} built in {time.monotonic() - t0:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
