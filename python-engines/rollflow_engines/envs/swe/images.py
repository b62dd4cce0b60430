"""Source 2: a container image per instance, as SWE-bench ships its environments (docs/swe-bench.md, "Sources").

The image supplies the root file system; bubblewrap stays the sandbox. Once per image id the server unpacks the
image (``<engine> create`` + ``<engine> export``, no container is ever started) into a read-only cache directory,
``<cache_dir>/<image id>``: written under a temporary name and renamed, under a lock file, so two episodes (or two
servers sharing the cache) never unpack one image twice and nobody sees half a tree. Each episode holds its image
from reset to close, and the cache is kept within ``cache_max_gb`` by removing images nobody holds
(image_cache.py). The export is unpacked with
tarfile's ``tar`` filter (no absolute or escaping paths, no setuid/setgid/sticky bits, no group/other write) and
without device nodes or FIFOs; the root file system is the image's, so its absolute links are kept (``data`` would
refuse them), and they mean the image's paths, never the host's: only bwrap follows them, inside the sandbox.

Then an episode is a local one whose system is the image's: the repository at its base state is
``<rootfs>/<repo_dir>`` copied into the workspace, and commands and gradings run with /usr, /etc, /bin, /lib*
bound from the root file system (sandbox.mounts ``system_root``) and the interpreter's directories bound from it
too (``interpreter_binds_in``). Export rather than ``podman image mount``: it works with docker as well, and the
cache outlives the engine's own (an image removed after its unpacking still serves); it costs a copy of each
image's whole file system on disk (the price is measured in bench/results/swe-image-source.md).

An engine that is missing or refuses, or an image that is not there, is the server's failure (SandboxUnavailable:
a 503 naming the engine's own message), never the model's 0.
"""
from __future__ import annotations

import functools
import logging
import os
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ...sandbox import SandboxUnavailable, current
from ...sandbox.mounts import interpreter_binds_in
from . import image_cache
from .image_cache import ImageLease
from .instances import Instance
from .sources import Checkout, PreparedEnv, check_template, fill

DEFAULT_CACHE = Path(tempfile.gettempdir()) / "rollflow-swe-rootfs"
ENGINE_TIMEOUT_S = 600  # an export of a few GB on a slow disk
log = logging.getLogger(__name__)


class ImageSource(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["image"] = Field(description="image: a container image per instance, its root file system the sandbox's system.")
    image: str = Field(min_length=1, description="The instance's image, a template over {instance_id}, {repo}, {repo_slug}, "
                                                 "{base_commit}, e.g. localhost/rollflow-swe/{repo_slug}:{instance_id}; "
                                                 "lower-cased, as image references must be.")
    repo_dir: str = Field(default="/testbed", description="The repository at its base state inside the image (an absolute path; "
                                                          "SWE-bench's images keep it at /testbed).")
    python: str = Field(default="/opt/env/bin/python", description="The prepared environment's interpreter inside the image "
                                                                   "(SWE-bench's images: /opt/miniconda3/envs/testbed/bin/python).")
    engine: Literal["podman", "docker"] = Field(default="podman", description="The container engine that has the image.")
    cache_dir: str = Field(default=str(DEFAULT_CACHE), min_length=1, description="Where unpacked root file systems are kept, one "
                                                                                 "directory per image id, shared by the servers on one disk.")
    cache_max_gb: float = Field(default=20.0, gt=0, description="The most the unpacked root file systems may take on disk, in GB (10^9 "
                                                                "bytes): after an unpacking, the images taken least recently that no "
                                                                "episode holds are removed (and unpacked again when needed) until the "
                                                                "cache is within it. Images in use are never removed.")

    @field_validator("image")
    @classmethod
    def _template(cls, value: str) -> str:
        return check_template(value)

    @field_validator("repo_dir", "python")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not value.startswith("/") or ".." in value.split("/"):
            raise ValueError(f"{value!r} is not an absolute path inside the image; expected e.g. /testbed or /opt/env/bin/python")
        return value


def _engine(engine: str, *args: str, stdout=subprocess.PIPE) -> subprocess.CompletedProcess:
    """Run the engine; SandboxUnavailable with its own message when it is missing or refuses."""
    try:
        done = subprocess.run([engine, *args], stdout=stdout, stderr=subprocess.PIPE, timeout=ENGINE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SandboxUnavailable(f"the container engine {engine!r} could not run `{engine} {args[0]}`: {e}") from e
    if done.returncode != 0:
        raise SandboxUnavailable(f"`{engine} {' '.join(args)}` failed (exit {done.returncode}): "
                                 f"{done.stderr.decode(errors='replace').strip()[-1000:] or 'no message'}")
    return done


def image_id(engine: str, image: str) -> str:
    return _engine(engine, "image", "inspect", "--format", "{{.Id}}", image).stdout.decode().strip().removeprefix("sha256:")


def _rootfs_member(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    if member.ischr() or member.isblk() or member.isfifo():
        return None  # the sandbox has its own /dev
    return tarfile.tar_filter(member, dest)


def unpack(engine: str, image: str, cache_dir: Path, max_bytes: int) -> ImageLease:
    """A lease on the image's root file system under ``cache_dir``, unpacked on the first call for its id; after an
    unpacking, the images no episode holds are trimmed to ``max_bytes`` (image_cache.py)."""
    ident = image_id(engine, image)

    def export_into(partial: Path) -> None:
        container = _engine(engine, "create", ident, "/bin/true").stdout.decode().strip()
        try:
            _export(engine, container, partial)
        finally:
            _engine(engine, "rm", "-f", container, stdout=subprocess.DEVNULL)

    lease, unpacked = image_cache.take(cache_dir, ident, export_into)
    if unpacked:
        try:
            for gone in image_cache.trim(cache_dir, max_bytes):
                log.info("image cache %s over %d bytes: removed image %s (no episode held it; unpacked again when needed)", cache_dir, max_bytes, gone)
        except OSError as e:  # the episode has its image; a cache that cannot be trimmed now is trimmed after the next unpacking
            log.warning("could not trim the image cache %s: %s", cache_dir, e)
    return lease


def _export(engine: str, container: str, into: Path) -> None:
    try:
        proc = subprocess.Popen([engine, "export", container], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as e:
        raise SandboxUnavailable(f"the container engine {engine!r} could not run `{engine} export`: {e}") from e
    failure = None
    try:
        with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
            tar.extractall(into, numeric_owner=True, filter=_rootfs_member)
    except (tarfile.TarError, OSError) as e:
        proc.kill()
        failure = e
    finally:
        proc.stdout.close()
        with proc.stderr:
            err = proc.stderr.read().decode(errors="replace").strip()[-1000:] or "no message"
        code = proc.wait()
    if failure is not None:
        raise SandboxUnavailable(f"could not unpack `{engine} export {container}` into {into}: {failure} ({err})") from failure
    if code != 0:
        raise SandboxUnavailable(f"`{engine} export {container}` failed (exit {code}): {err}")


@functools.lru_cache(maxsize=64)
def _prepared_in(rootfs: Path, python: str) -> PreparedEnv:
    binds = interpreter_binds_in(rootfs, python)  # SandboxUnavailable if it cannot run
    return PreparedEnv(python, binds, (os.path.dirname(python),), rootfs)


def resolve_image(source: ImageSource, instance: Instance) -> tuple[Checkout, PreparedEnv]:
    """The instance's repository and environment from its image; SandboxUnavailable naming what is missing."""
    if current().mode != "bwrap":
        raise SandboxUnavailable(f"source.kind image needs sandbox mode bwrap (the image's system is bound into it), not {current().mode!r}")
    image = fill(source.image, instance).lower()
    try:
        lease = unpack(source.engine, image, Path(source.cache_dir).absolute(), int(source.cache_max_gb * 1e9))
    except OSError as e:  # the cache directory: not writable, a full disk
        raise SandboxUnavailable(f"instance {instance.instance_id}: could not unpack image {image} under {source.cache_dir}: {e}") from e
    rootfs = lease.rootfs
    try:
        repo = rootfs / source.repo_dir.lstrip("/")
        if not repo.is_dir() or not repo.resolve().is_relative_to(rootfs.resolve()):  # a link would mean the host's path
            raise SandboxUnavailable(f"instance {instance.instance_id}: image {image} has no directory {source.repo_dir} (source.repo_dir)")
        return ImageCheckout(repo, lease), _prepared_in(rootfs, source.python)
    except BaseException:
        lease.release()
        raise


@dataclass(frozen=True)
class ImageCheckout(Checkout):
    """The repository inside an unpacked image: the image stays in the cache until the episode releases this."""
    lease: ImageLease = field(compare=False, repr=False)

    def release(self) -> None:
        self.lease.release()
