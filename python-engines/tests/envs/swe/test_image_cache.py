"""The cache of unpacked images (envs/swe/image_cache.py) stays within its bound without taking an image from an
episode that holds it, in this process or another; what a dead server left is swept; an engine's images go through it
(a stand-in `podman` on PATH, so these run where no container engine does); a swe episode holds its checkout from its
reset to its close, and lets go of it when its reset fails."""
from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

import pytest

from rollflow_engines.envs.swe import image_cache, images
from rollflow_engines.envs.swe.sources import Checkout

from .helpers import play, play_config
from .project import source

KB = 1024


def files(size_kb: int):
    """An unpacking that writes one file of ``size_kb`` KiB of incompressible bytes and a read-only directory."""
    def unpack_into(root: Path) -> None:
        (root / "usr").mkdir()
        (root / "usr" / "blob").write_bytes(os.urandom(size_kb * KB))
        (root / "proc").mkdir(mode=0o555)  # as images have it: the tree must still be removable
    return unpack_into


def used_order(cache: Path, *idents: str) -> None:
    """Marks the images as taken in this order, oldest first (the stamps' mtimes, set rather than waited for)."""
    for age, ident in enumerate(reversed(idents), start=1):
        os.utime(cache / f".{ident}.size", (1_000_000 - age, 1_000_000 - age))


def cached(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.iterdir() if not p.name.startswith("."))


def test_an_image_is_unpacked_once_and_each_take_is_a_lease(tmp_path):
    calls = []
    def unpack_into(root: Path) -> None:
        calls.append(root)
        files(4)(root)
    first, unpacked = image_cache.take(tmp_path, "a", unpack_into)
    second, again = image_cache.take(tmp_path, "a", unpack_into)
    assert (unpacked, again, len(calls)) == (True, False, 1)
    assert first.rootfs == second.rootfs == tmp_path / "a" and (tmp_path / "a" / "usr" / "blob").stat().st_size == 4 * KB
    assert int((tmp_path / ".a.size").read_text()) == image_cache.disk_bytes(tmp_path / "a") >= 4 * KB
    first.release()
    second.release()


def test_trim_removes_the_images_taken_longest_ago_that_nobody_holds(tmp_path):
    for ident in "abc":
        image_cache.take(tmp_path, ident, files(64))[0].release()
    held, _ = image_cache.take(tmp_path, "c", files(64))
    used_order(tmp_path, "c", "a", "b")  # c taken first of all, but held
    size = image_cache.disk_bytes(tmp_path / "a")
    assert image_cache.trim(tmp_path, 2 * size) == ["a"]  # c, the oldest, is held: a goes
    assert cached(tmp_path) == ["b", "c"]
    assert image_cache.trim(tmp_path, 0) == ["b"]
    assert cached(tmp_path) == ["c"]  # over its bound while c is held
    held.release()
    assert image_cache.trim(tmp_path, 0) == ["c"]
    assert cached(tmp_path) == [] and not [p for p in tmp_path.iterdir() if p.is_dir()]  # no .evicted tree left
    taken, unpacked = image_cache.take(tmp_path, "a", files(64))  # needed again: unpacked again
    assert unpacked and cached(tmp_path) == ["a"]
    taken.release()


def test_an_image_held_by_another_process_is_not_removed(tmp_path):
    image_cache.take(tmp_path, "a", files(16))[0].release()
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from rollflow_engines.envs.swe import image_cache
        lease, _ = image_cache.take(Path({str(tmp_path)!r}), "a", None)
        print("held", flush=True)
        sys.stdin.read()
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert image_cache.trim(tmp_path, 0) == []
        assert cached(tmp_path) == ["a"]
    finally:
        holder.stdin.close()
        holder.stdout.close()
        assert holder.wait(timeout=60) == 0
    assert image_cache.trim(tmp_path, 0) == ["a"]  # its lease went with the process


def test_what_a_dead_server_left_is_swept_and_an_unpacking_in_progress_is_not(tmp_path):
    image_cache.take(tmp_path, "a", files(4))[0].release()
    removing = tmp_path / ".evicted.b.1234abcd"  # a server died removing image b
    (removing / "etc").mkdir(parents=True)
    (removing / "etc" / "passwd").write_text("x")
    (removing / "etc").chmod(0o555)
    dead = tmp_path / ".c.k2j3h4g5"  # a server died unpacking image c
    dead.mkdir()
    (dead / "file").write_text("half")
    live = tmp_path / ".d.a1b2c3d4"  # another server unpacks image d now: it holds d's lock
    live.mkdir()
    lock = os.open(tmp_path / ".d.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        assert image_cache.trim(tmp_path, 10**12) == []
        assert (not removing.exists(), not dead.exists(), live.is_dir()) == (True, True, True)
        assert cached(tmp_path) == ["a"]
    finally:
        os.close(lock)


def test_an_image_unpacked_before_sizes_were_kept_is_sized_when_taken_or_trimmed(tmp_path):
    for ident in "ab":
        (tmp_path / ident).mkdir()
        (tmp_path / ident / "blob").write_bytes(os.urandom(8 * KB))
    lease, unpacked = image_cache.take(tmp_path, "a", None)
    assert not unpacked and int((tmp_path / ".a.size").read_text()) >= 8 * KB
    assert image_cache.trim(tmp_path, 0) == ["b"]  # b had no record: sized, and counted as taken long ago
    lease.release()


FAKE_PODMAN = """#!{python}
# A stand-in for podman: each image is a directory under $FAKE_IMAGES, its id the directory's name.
import os, sys, tarfile
store = os.environ["FAKE_IMAGES"]
cmd = sys.argv[1:]
with open(os.path.join(store, "calls"), "a") as log:
    log.write(" ".join(cmd) + "\\n")
if cmd[:2] == ["image", "inspect"]:
    name = cmd[-1].rsplit(":", 1)[-1]
    if not os.path.isdir(os.path.join(store, name)):
        sys.exit("Error: " + cmd[-1] + ": image not known")
    print("sha256:" + name)
elif cmd[0] == "create":
    print("container-" + cmd[1])
elif cmd[0] == "export":
    with tarfile.open(fileobj=sys.stdout.buffer, mode="w|") as tar:
        tar.add(os.path.join(store, cmd[1].removeprefix("container-")), arcname=".")
elif cmd[0] != "rm":
    sys.exit("unexpected " + " ".join(cmd))
"""


@pytest.fixture
def fake_podman(tmp_path, monkeypatch) -> Path:
    bin_dir, store = tmp_path / "bin", tmp_path / "images"
    bin_dir.mkdir()
    store.mkdir()
    (bin_dir / "podman").write_text(FAKE_PODMAN.format(python=sys.executable))
    (bin_dir / "podman").chmod(0o755)
    for name in ("one", "two"):
        (store / name / "testbed").mkdir(parents=True)
        (store / name / "testbed" / "data").write_bytes(os.urandom(32 * KB))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_IMAGES", str(store))
    return store


def test_an_engine_s_images_are_unpacked_into_the_cache_and_trimmed_after_an_unpacking(fake_podman, tmp_path):
    cache = tmp_path / "rootfs"
    first = images.unpack("podman", "localhost/x:one", cache, max_bytes=10**12)
    assert (first.rootfs / "testbed" / "data").stat().st_size == 32 * KB
    first.release()
    second = images.unpack("podman", "localhost/x:two", cache, max_bytes=1)  # room for none: the one nobody holds goes
    assert cached(cache) == ["two"]
    again = images.unpack("podman", "localhost/x:two", cache, max_bytes=1)  # found: the engine only asked for the id
    calls = (fake_podman / "calls").read_text().splitlines()
    assert [c.split()[0] for c in calls] == ["image", "create", "export", "rm", "image", "create", "export", "rm", "image"]
    for lease in (second, again):
        lease.release()


def test_a_swe_episode_holds_its_checkout_from_reset_to_close_and_a_failed_reset_lets_go(built, monkeypatch, tmp_path):
    released = []
    monkeypatch.setattr(Checkout, "release", lambda self: released.append(self.path))
    task = "tally__tally-1"
    results = play(built, task, ["<bash>ls</bash>"])
    assert results and len(released) == 1  # at close
    bad = tmp_path / "bad.jsonl"
    rows = [line for line in built.instances_path.read_text().splitlines() if f'"{task}"' in line]
    row = {**json.loads(rows[0]), "test_patch": "diff --git a/nothing b/nothing\n--- a/nothing\n+++ b/nothing\n@@ -1 +1 @@\n-x\n+y\n"}
    bad.write_text(json.dumps(row) + "\n")
    with pytest.raises(Exception, match="nothing"):
        play_config({"instances": str(bad), "source": source(built), "ids": [task]}, [])
    assert len(released) == 2  # the reset failed after its checkout was taken
