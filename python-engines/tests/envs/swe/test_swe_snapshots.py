"""Durable swe episodes: after each step that runs a command the env saves an incremental snapshot (a
manifest of what differs from the reset state, contents as blobs named by their sha256, envs/swe/workspace_manifest.py).
A fresh env on another server restores it over the instance's reset state, is sent the edits and other actions after
it again, and continues, running no command again:
files, deletions, links, FIFOs, directories and modes come back; only what changed is hashed and written; a blob
that is damaged is snapshot_corrupt, one that is gone a 404; an interrupted episode grades as an uninterrupted one."""
import os
from pathlib import Path

import pytest

from rollflow_engines.envs import snapshots
from rollflow_engines.envs.swe import workspace_manifest
from rollflow_engines.errors import NotFoundError, RequestError

from .helpers import apply_patch, bash, tree

INSTANCE = "tally__tally-2"


@pytest.fixture
def as_blobs(monkeypatch):
    """Every content the store lacks goes to it as a blob (no manifest carries any), as a large change's do."""
    monkeypatch.setattr(workspace_manifest, "CARRIED_MAX_BYTES", 0)


def blobs(tmp_path: Path) -> set[str]:
    where = tmp_path / "snapshots" / snapshots.BLOBS
    return {p.name for p in where.iterdir()} if where.is_dir() else set()


def restored(envs, saved: str):
    env = envs()  # another server's env: the same seed and config, then the snapshot
    env.restore(snapshots.load(saved))
    return env


def test_a_restored_episode_has_the_workspace_and_counters_and_runs_nothing_again(envs):
    first = envs()
    first.step(bash("echo ran >> runs.log && mkdir -p notes/empty && printf 'x = 1\\n' > notes/new.py"))
    first.step('<replace path="tally/stats.py"><old>"""Descriptive statistics</old><new>"""Statistics</new></replace>')
    saved = first.step(bash("cat runs.log")).info["snapshot"]
    second = restored(envs, saved)
    assert tree(second.ws.path) == tree(first.ws.path)
    assert second.info()["turn"] == 3
    assert second.step(bash("echo ran >> runs.log && cat runs.log")).observation == "[exit 0]\nran\nran\n"  # not run twice


def test_a_snapshot_holds_only_what_changed_and_an_edit_is_held_by_the_next_commands(envs, tmp_path, monkeypatch, as_blobs):
    env = envs()
    # No file is racily clean: a hash is reused whenever the file's key is unchanged. (Whether a file written just
    # before a walk is racy depends on the clock; the next test pins that case down.)
    monkeypatch.setattr(workspace_manifest, "RACY_NS", -10**12)
    first = snapshots.load(env.step(bash("echo one > a.txt && echo two > b.txt")).info["snapshot"])
    assert set(first["changes"]) == {"a.txt", "b.txt"} and len(blobs(tmp_path)) == 2  # the repository itself is not stored
    assert env.manifest.stats["hashed_files"] == 2
    second = snapshots.load(env.step(bash("echo three >> a.txt")).info["snapshot"])
    assert len(blobs(tmp_path)) == 3 and second["changes"]["b.txt"] == first["changes"]["b.txt"]  # b.txt's blob not written again
    assert env.manifest.stats["hashed_files"] == 3  # a.txt only: b.txt's key is what it was when hashed
    # Edits save nothing (the client sends them again after a restore): no walk, no hash, no write.
    assert "snapshot" not in env.step('<replace path="tally/units.py"><old>FACTORS</old><new>SCALES</new></replace>').info  # refused
    edited = env.step('<replace path="./b.txt"><old>two</old><new>deux</new></replace>')
    assert edited.observation == "Replaced 1 occurrence in ./b.txt." and "snapshot" not in edited.info
    assert len(blobs(tmp_path)) == 3 and env.manifest.stats["hashed_files"] == 3
    third = snapshots.load(env.step(bash("true")).info["snapshot"])  # the next command's walk finds the edit, by the walk's name
    assert len(blobs(tmp_path)) == 4 and env.manifest.stats["hashed_files"] == 4
    assert set(third["changes"]) == {"a.txt", "b.txt"} and third["changes"]["b.txt"] != second["changes"]["b.txt"]


def test_a_file_changed_within_the_racy_window_is_hashed_again(envs, tmp_path, monkeypatch, as_blobs):
    """A ctime is as coarse as the kernel's tick: a file whose ctime is within RACY_NS of the walk that hashed it may
    change again in the same tick without its key changing, so its hash is not reused (every file racy here). b.txt
    is opened for writing and closed unchanged: its event has it looked at again, its key is the same."""
    env = envs()
    monkeypatch.setattr(workspace_manifest, "RACY_NS", 10**18)
    first = snapshots.load(env.step(bash("echo one > a.txt && echo two > b.txt")).info["snapshot"])
    second = snapshots.load(env.step(bash("echo three >> a.txt && : >> b.txt")).info["snapshot"])
    assert env.manifest.stats["hashed_files"] == 4  # b.txt hashed again, though unchanged
    assert second["changes"]["b.txt"] == first["changes"]["b.txt"] and len(blobs(tmp_path)) == 3  # and its blob not written again


def test_a_change_that_keeps_size_and_mtime_is_still_seen(envs):
    """The policy can set mtime back (touch -d), not ctime: the changed content is saved."""
    env = envs()
    env.step(bash("printf aaaa > same.txt && touch -d '2001-01-01' same.txt"))
    saved = env.step(bash("printf bbbb > same.txt && touch -d '2001-01-01' same.txt")).info["snapshot"]
    assert (restored(envs, saved).ws.path / "same.txt").read_bytes() == b"bbbb"


def test_deletions_links_fifos_directories_and_modes_come_back_without_following_links(envs, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("host\n")
    first = envs()
    saved = first.step(bash(
        f"rm tally/units.py && rm -r tests && ln -s {outside} tests && ln -s {outside}/secret leak && ln -s tally/stats.py rel"
        " && mkfifo pipe && mkdir -p deep/empty && printf '#!/bin/sh\\n' > run.sh && chmod 755 run.sh")).info["snapshot"]
    second = restored(envs, saved)
    got = tree(second.ws.path)
    assert got == tree(first.ws.path)
    assert "tally/units.py" not in got and got["tests"] == ("link", str(outside)) and got["leak"] == ("link", f"{outside}/secret")
    assert got["pipe"][0] == "fifo" and got["deep/empty"][0] == "dir" and got["run.sh"][1] == 0o755
    assert [p.name for p in outside.iterdir()] == ["secret"]  # nothing written through the link


def test_a_manifest_path_through_a_link_is_refused_not_followed(envs, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    env = envs()
    saved = snapshots.load(env.step(bash(f"ln -s {outside} out && echo x > x.txt")).info["snapshot"])
    forged = {**saved, "changes": {**saved["changes"], "out/planted": saved["changes"]["x.txt"]}}
    with pytest.raises(RequestError) as refused:
        envs().restore(forged)
    assert refused.value.code == snapshots.CORRUPT and list(outside.iterdir()) == []


def test_a_damaged_blob_is_snapshot_corrupt_and_a_missing_one_a_404(envs, tmp_path, as_blobs):
    env = envs()
    saved = env.step(bash("echo changed > a.txt")).info["snapshot"]
    (blob,) = blobs(tmp_path)
    path = tmp_path / "snapshots" / snapshots.BLOBS / blob
    good = path.read_bytes()
    path.write_bytes(good[:-1] + bytes([good[-1] ^ 0xFF]))
    with pytest.raises(RequestError) as damaged:
        envs().restore(snapshots.load(saved))
    assert damaged.value.code == snapshots.CORRUPT and damaged.value.field == "restore"
    import zlib
    path.write_bytes(zlib.compress(b"other content"))  # well formed, but not what its name says
    with pytest.raises(RequestError) as swapped:
        envs().restore(snapshots.load(saved))
    assert swapped.value.code == snapshots.CORRUPT
    path.unlink()
    with pytest.raises(NotFoundError):
        envs().restore(snapshots.load(saved))
    with pytest.raises(NotFoundError):
        snapshots.load("0" * 32)


def test_a_snapshot_of_another_instance_is_refused(envs):
    saved = envs().step(bash("echo x > x.txt")).info["snapshot"]
    with pytest.raises(ValueError, match="of instance"):
        envs("tally__tally-1").restore(snapshots.load(saved))


@pytest.mark.parametrize("fix", [True, False])
def test_an_episode_continued_after_env_loss_grades_as_an_uninterrupted_one(built, envs, fix):
    row = built.row(INSTANCE)
    first_half = [bash("echo wasted > notes.txt"), apply_patch(row["patch"]) if fix else bash("echo no fix >> notes.txt")]
    second_half = [bash("rm notes.txt"), "<submit/>"]
    whole = envs()
    for action in first_half + second_half:
        uninterrupted = whole.step(action)
    lost = envs()
    for action in first_half:
        saved = lost.step(action).info["snapshot"]
    resumed = restored(envs, saved)
    for action in second_half:
        continued = resumed.step(action)
    keys = ("success", "fail_to_pass", "pass_to_pass", "turn", "reward_tampered")
    assert (continued.reward, {k: continued.info[k] for k in keys}) == (uninterrupted.reward, {k: uninterrupted.info[k] for k in keys})
    assert continued.reward == (1.0 if fix else 0.0)


def test_blobs_no_snapshot_names_are_swept_and_named_ones_kept(envs, tmp_path, as_blobs):
    done = envs()
    done.step(bash("echo gone > a.txt"))
    done.step("<submit/>")
    done.close()  # finished: its snapshot is removed, its blob is named by none
    live = envs()
    live.step(bash("echo kept > b.txt"))
    assert len(blobs(tmp_path)) == 2
    assert snapshots.reap_blobs(3600) == 0  # young blobs stay (an episode may be saving right now)
    assert snapshots.reap_blobs(0) == 1 and len(blobs(tmp_path)) == 1
    assert (restored(envs, live.snapshot).ws.path / "b.txt").read_text() == "kept\n"


def test_edits_after_the_last_snapshot_sent_again_give_the_episode_back_whole(envs):
    first = envs()
    saved = first.step(bash("echo two > b.txt")).info["snapshot"]
    after = ['<replace path="b.txt"><old>two</old><new>deux</new></replace>',
             '<replace path="tally/stats.py"><old>"""Descriptive statistics</old><new>"""Statistics</new></replace>',
             '<replace path="../../../etc/passwd"><old>root</old><new>toor</new></replace>',  # refused: changes nothing
             "<view>b.txt</view>"]
    answers = [first.step(action) for action in after]
    assert not any("snapshot" in a.info for a in answers)
    second = restored(envs, saved)  # what the client does after losing the session: restore, then send `after` again
    assert [second.step(action).observation for action in after] == [a.observation for a in answers]
    assert tree(second.ws.path) == tree(first.ws.path) and second.info() == first.info()
    assert (second.ws.path / "b.txt").read_text() == "deux\n"


def test_after_a_command_whose_snapshot_failed_even_an_edit_saves_one(envs, monkeypatch, tmp_path):
    first = envs()
    told = first.step(bash("echo one > a.txt")).info["snapshot"]
    save = snapshots.save

    def refused(value, carried=None):
        monkeypatch.setattr(snapshots, "save", save)  # the store is back for the next step
        raise snapshots.SnapshotNotSaved("the store is down")
    monkeypatch.setattr(snapshots, "save", refused)
    assert "snapshot" not in first.step(bash("echo two > b.txt")).info
    assert stored(tmp_path) == {told}  # the client's latest, kept
    saved = first.step('<replace path="b.txt"><old>two</old><new>deux</new></replace>').info["snapshot"]
    assert stored(tmp_path) == {saved}  # and replaced by the next one saved, not left to the janitor
    second = restored(envs, saved)  # holds all three actions: none is sent again, the command never runs twice
    assert tree(second.ws.path) == tree(first.ws.path) and second.info() == first.info()
    assert (second.ws.path / "b.txt").read_text() == "deux\n"


def test_a_read_only_directory_comes_back_with_its_files(envs):
    first = envs()
    saved = first.step(bash("mkdir -p locked/inner && echo x > locked/inner/f && chmod 555 locked/inner locked")).info["snapshot"]
    second = restored(envs, saved)
    try:
        assert tree(second.ws.path) == tree(first.ws.path)
    finally:
        for env in (first, second):
            os.chmod(env.ws.path / "locked", 0o755)
            os.chmod(env.ws.path / "locked" / "inner", 0o755)


def stored(tmp_path: Path) -> set[str]:
    """The manifests in the snapshot directory (the blobs aside)."""
    return {p.name for p in (tmp_path / "snapshots").iterdir() if p.is_file()}


def test_a_command_that_changes_nothing_writes_nothing_and_its_reference_restores_its_counters(envs, tmp_path):
    first = envs()
    saved = first.step(bash("echo one > a.txt")).info["snapshot"]
    before = (stored(tmp_path), blobs(tmp_path))
    # Read, list, search (and a file written back as it was): the walk finds the changes of the manifest saved.
    for command in ("cat a.txt", "ls -la && grep -rn def tally | head -3", "echo one > a.txt"):
        reference = first.step(bash(command)).info["snapshot"]
        assert snapshots.stored_id(reference) == saved and reference != saved
        assert (stored(tmp_path), blobs(tmp_path)) == before  # nothing written, the manifest it names kept
    second = restored(envs, reference)  # the workspace of the manifest, the counters of the last step
    assert tree(second.ws.path) == tree(first.ws.path) and second.info() == first.info() and second.info()["turn"] == 4
    # A step that changes something writes a manifest again, and the one the references named goes.
    changed = first.step(bash("echo two >> a.txt")).info["snapshot"]
    assert "+" not in changed and stored(tmp_path) == {changed}
    with pytest.raises(NotFoundError):
        snapshots.load(reference)


@pytest.mark.parametrize("later", ["turn=4", "turn=4,invalid=0,chars=1,sandbox_errors=0,extra=1", "turn=-1,invalid=0,chars=1,sandbox_errors=0",
                                   "turn=4,invalid=0,chars=1,sandbox_errors=0,turn=5", "turn=٣,invalid=0,chars=1,sandbox_errors=0", ""])
def test_a_reference_whose_counters_are_not_the_snapshots_is_a_404(envs, later):
    saved = envs().step(bash("echo one > a.txt")).info["snapshot"]
    with pytest.raises(NotFoundError):
        snapshots.load(f"{saved}+{later}")
    assert snapshots.load(f"{saved}+turn=4,invalid=0,chars=1,sandbox_errors=0")["counters"] == {"turn": 4, "invalid": 0, "chars": 1, "sandbox_errors": 0}


def test_a_workspace_with_no_change_names_the_reset_state_and_writes_nothing(envs, tmp_path):
    first = envs()
    reference = first.step(bash("ls -la && cat tally/stats.py > /dev/null")).info["snapshot"]  # an episode's first look
    assert snapshots.stored_id(reference) == snapshots.RESET and not (tmp_path / "snapshots").exists()
    second = restored(envs, reference)  # another server: its own reset, then the counters
    assert tree(second.ws.path) == tree(first.ws.path) and second.info() == first.info() and second.info()["turn"] == 1
    # A change, then the change undone: the manifest goes (the step removes it), and the reset state is named again.
    saved = first.step(bash("echo one > a.txt")).info["snapshot"]
    assert stored(tmp_path) == {saved}
    undone = first.step(bash("rm a.txt")).info["snapshot"]
    assert snapshots.stored_id(undone) == snapshots.RESET and stored(tmp_path) == set()
    again = first.step(bash("echo one > a.txt")).info["snapshot"]  # the same changes as the removed manifest's
    assert "+" not in again and stored(tmp_path) == {again}  # written anew, not a reference to the one removed
    assert tree(restored(envs, again).ws.path) == tree(first.ws.path)


@pytest.mark.parametrize("later", ["turn=1", "turn=1,invalid=0,chars=1,sandbox_errors=0,extra=1", "turn=x,invalid=0,chars=1,sandbox_errors=0", ""])
def test_a_reference_to_the_reset_state_with_other_counters_is_a_404(envs, later):
    with pytest.raises(NotFoundError):
        envs().restore(snapshots.load(f"{snapshots.RESET}+{later}"))


def test_a_few_small_files_changed_ride_in_the_manifest_one_write_a_step(envs, tmp_path):
    """The contents the store lacks are carried by the manifest itself (up to CARRIED_MAX_BYTES): one file written for
    the step, and every later manifest carries them again while the store still lacks them."""
    env = envs()
    saved = env.step(bash("echo one > a.txt && echo two > b.txt")).info["snapshot"]
    assert blobs(tmp_path) == set() and stored(tmp_path) == {saved}
    assert len(snapshots.load(saved)["carried"]) == 2
    later = env.step(bash("echo three > c.txt")).info["snapshot"]
    assert blobs(tmp_path) == set() and stored(tmp_path) == {later}
    carried = snapshots.load(later)["carried"]
    assert sorted(carried.values()) == [b"one\n", b"three\n", b"two\n"]  # each checked against its name by load
    assert tree(restored(envs, later).ws.path) == tree(env.ws.path)


def test_contents_past_what_a_manifest_carries_go_to_the_store_as_blobs(envs, tmp_path, monkeypatch):
    monkeypatch.setattr(workspace_manifest, "CARRIED_MAX_BYTES", 10)
    env = envs()
    saved = env.step(bash("echo 1234 > small && seq 100 > large")).info["snapshot"]  # 5 bytes and 292
    assert list(snapshots.load(saved)["carried"].values()) == [b"1234\n"] and len(blobs(tmp_path)) == 1
    assert tree(restored(envs, saved).ws.path) == tree(env.ws.path)


def test_a_manifest_whose_carried_contents_are_damaged_is_snapshot_corrupt(envs, tmp_path):
    env = envs()
    saved = env.step(bash("echo one > a.txt")).info["snapshot"]
    path = tmp_path / "snapshots" / saved
    good = path.read_bytes()
    import zlib
    value = snapshots.load(saved)
    value.pop("carried")
    swapped = snapshots.save(value, {"a" * 64: b"one\n"})  # well formed, not what its name says
    for damaged in (good[:-1] + bytes([good[-1] ^ 0xFF]), good + b"x", good[:-3], zlib.compress(b"{}") + b"x"):
        path.write_bytes(damaged)
        with pytest.raises(RequestError) as refused:
            envs().restore(snapshots.load(saved))
        assert refused.value.code == snapshots.CORRUPT and refused.value.field == "restore"
    with pytest.raises(RequestError) as refused:
        snapshots.load(swapped)
    assert refused.value.code == snapshots.CORRUPT
