"""A snapshot looks at the paths inotify reported (envs/swe/workspace_watch.py), not at the whole workspace: after
any command the changes it records are those a whole walk records, entry for entry. The policy is the adversary:
each way its commands could change a file without that file's name being reported (a shared mmap, a hard link
written through and removed again, a link inside a directory made meanwhile, a directory renamed or turned into a
link) is played in the real sandbox here, and so are the kernel's own limits (a full queue, no watch left)."""
import errno
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inotify_simple import Event, flags

from rollflow_engines.envs import snapshots
from rollflow_engines.envs.swe import workspace_watch
from rollflow_engines.envs.swe.env import SweEnv
from rollflow_engines.envs.swe.workspace_manifest import WorkspaceManifest

from .helpers import bash

def walked_whole(env: SweEnv) -> dict:
    """The changes a whole walk of the env's workspace finds against the same reset state."""
    whole = WorkspaceManifest(env.ws.path, env.ws.uid, watched=False)
    whole.base = env.manifest.base
    whole.rescan()
    return whole.changes


def step(env: SweEnv, script: str) -> tuple[int, int]:
    """Runs ``script``; the (whole walks, paths looked at) its snapshot took. Its changes are checked against a whole
    walk, and the snapshot it names holds them."""
    before = dict(env.manifest.stats)
    result = env.step(bash(script))
    assert result.observation.startswith("[exit 0]"), result.observation
    assert env.manifest.changes == walked_whole(env), script
    saved = snapshots.load(result.info["snapshot"])
    assert saved.get("changes", {}) == env.manifest.changes
    return (env.manifest.stats["whole_walks"] - before["whole_walks"],
            env.manifest.stats["paths_looked_at"] - before["paths_looked_at"])


def test_a_command_that_changes_files_in_place_is_looked_at_by_their_paths_alone(envs):
    env = envs()
    assert step(env, "echo '# one' >> tally/stats.py && printf x > tally/units.py") == (0, 2)
    assert env.manifest.changes["tally/stats.py"][0] == "f"
    assert step(env, "cat tally/stats.py > /dev/null && ls -R > /dev/null") == (0, 0)  # reads report nothing
    assert step(env, "rm tally/units.py && chmod 600 tally/text.py && ln -s stats.py tally/alias") == (0, 3)
    assert env.manifest.changes["tally/units.py"] is None and env.manifest.changes["tally/alias"] == ["l", "stats.py"]


def test_a_write_through_a_shared_mmap_after_its_file_was_closed_is_seen(envs):
    """No event comes while the mapping is written; the close of the file's last reference (at the process's exit)
    reports it, and the command's processes are gone before the snapshot looks."""
    env = envs()
    script = ("python -c \"import mmap, os; fd = os.open('tally/stats.py', os.O_RDWR); m = mmap.mmap(fd, 0); "
              "os.close(fd); m[0:1] = b'#'\"")
    assert step(env, script) == (0, 1)
    assert (env.ws.path / "tally/stats.py").read_bytes()[:1] == b"#" and "tally/stats.py" in env.manifest.changes


def test_a_hard_link_written_through_and_removed_again_is_seen(envs):
    """Only the link's name is reported; a file made and gone again within a command has the snapshot walk it all."""
    env = envs()
    assert step(env, "ln tally/stats.py t && echo '# via a link' >> t && rm t") == (1, 1)
    assert "tally/stats.py" in env.manifest.changes
    assert step(env, "echo '# again' >> tally/text.py") == (0, 1)  # no link left: by paths again


def test_a_workspace_holding_a_hard_link_is_walked_whole_until_it_holds_none(envs):
    env = envs()
    assert step(env, "ln tally/stats.py keep")[0] == 1
    assert step(env, "echo '# via keep' >> keep")[0] == 1  # reported as keep; tally/stats.py changed too
    assert env.manifest.changes["tally/stats.py"] == env.manifest.changes["keep"]
    assert step(env, "rm keep")[0] == 1  # the walk before it saw the link: this one finds it gone
    assert step(env, "echo '# plain' >> tally/stats.py") == (0, 1)


def test_a_link_made_inside_a_new_directory_and_removed_is_seen(envs):
    """Nothing watched the new directory while the command ran: its making has the snapshot walk it all."""
    env = envs()
    assert step(env, "mkdir d && ln tally/stats.py d/x && echo '# hidden' >> d/x && rm d/x")[0] == 1
    assert "tally/stats.py" in env.manifest.changes and env.manifest.changes["d"][0] == "d"
    assert step(env, "echo '# in d' > d/y") == (0, 1)  # the walk watched d


def test_a_renamed_directory_is_walked_then_watched_under_its_new_name(envs):
    env = envs()
    step(env, "mkdir -p d/e && echo 1 > d/e/f")
    assert step(env, "mv d g")[0] == 1
    assert step(env, "echo 2 >> g/e/f") == (0, 1) and "g/e/f" in env.manifest.changes and "d/e/f" not in env.manifest.changes


def test_a_directory_turned_into_a_link_is_recorded_as_the_link_never_followed(envs):
    env = envs()
    step(env, "rm -rf tests && ln -s /etc tests")
    assert env.manifest.changes["tests"] == ["l", "/etc"]
    assert not any(rel.startswith("tests/") and entry is not None for rel, entry in env.manifest.changes.items())
    step(env, "rm tests && touch tests")  # and the link into a file
    assert env.manifest.changes["tests"][0] == "f"


def test_an_edit_by_the_server_is_seen_by_the_next_commands_look(envs):
    env = envs()
    env.step('<replace path="tally/stats.py"><old>"""Descriptive statistics</old><new>"""Statistics</new></replace>')
    assert step(env, "true")[0] == 0 and "tally/stats.py" in env.manifest.changes  # its temporary file, renamed, too


def test_a_restored_episode_is_walked_once_then_looked_at_by_paths(envs):
    first = envs()
    step(first, "mkdir -p notes && echo a > notes/a && echo '# x' >> tally/stats.py")
    saved = first.step(bash("echo b > notes/b")).info["snapshot"]
    second = envs()
    second.restore(snapshots.load(saved))
    assert second.manifest.changes == walked_whole(second)
    assert step(second, "echo c >> notes/a")[0] == 1  # the restore made directories: the first look is whole
    assert step(second, "echo d >> notes/a") == (0, 1)


def test_a_full_queue_has_every_workspace_walked_whole_once(envs, monkeypatch):
    env, other = envs(), envs()
    step(env, "echo '# one' >> tally/stats.py")
    instance = workspace_watch._shared()
    real_read, overflowed = instance.inotify.read, [Event(-1, flags.Q_OVERFLOW, 0, "")]
    monkeypatch.setattr(instance.inotify, "read", lambda timeout=None: [overflowed.pop()] if overflowed else real_read(timeout=timeout))
    assert step(env, "echo '# two' >> tally/stats.py")[0] == 1
    assert step(other, "echo '# other' >> tally/text.py")[0] == 1
    assert step(env, "echo '# three' >> tally/stats.py") == (0, 1)


def test_a_command_naming_more_paths_than_a_batch_holds_is_walked_whole_and_holds_none(envs, monkeypatch):
    """A command that makes and removes names without end cannot grow what the server keeps of its events."""
    monkeypatch.setattr(workspace_watch, "MAX_PATHS", 3)
    env = envs()
    assert step(env, "echo 1 >> tally/stats.py && echo 2 >> tally/text.py && echo 3 >> tally/units.py") == (0, 3)
    watch = env.manifest.watch
    env.step(bash("for i in $(seq 50); do echo $i > a$i; done"))
    assert env.manifest.changes == walked_whole(env) and env.manifest.stats["whole_walks"] == 1
    env.ws.run("for i in $(seq 50); do echo $i >> a$i; done")  # a command of the sandbox's, no look after it
    other = envs()
    other.step(bash("true"))  # its look reads the queue: env's events land in env's batch, which stops holding them
    assert not watch.pending.paths and not watch.pending.complete
    assert step(env, "true")[0] == 1 and step(env, "echo 4 >> a1") == (0, 1)


def test_no_watch_left_means_whole_walks_and_the_same_snapshots(envs, monkeypatch):
    instance = workspace_watch._shared()

    def refuse(path, mask):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(instance.inotify, "add_watch", refuse)
    env = envs()
    assert step(env, "echo '# one' >> tally/stats.py")[0] == 1
    assert step(env, "mkdir d && echo 1 > d/f")[0] == 1
    assert not env.manifest.watch.directories


def test_without_an_inotify_instance_every_look_is_whole(envs, monkeypatch):
    monkeypatch.setattr(workspace_watch.WorkspaceWatch, "open", classmethod(lambda cls: None))
    env = envs()
    assert env.manifest.watch is None
    assert step(env, "echo '# one' >> tally/stats.py")[0] == 1


def test_each_workspace_hears_its_own_events_and_a_closed_one_leaves_no_watch(envs):
    env, other = envs(), envs()
    assert step(env, "echo '# one' >> tally/stats.py") == (0, 1)
    assert step(other, "true") == (0, 0)
    watch, owners = env.manifest.watch, workspace_watch._shared().owners
    assert watch.directories and all(owners[wd][0] is watch for wd in watch.directories.values())
    env.close()
    assert not any(owner is watch for owner, _ in owners.values())


OPERATIONS = [
    "echo x >> a", "printf y > b", "rm -f a", "mkdir -p d", "rm -rf d", "echo z > d/c", "mv a b", "mv b d/c",
    "ln -s a l", "rm -f l", "ln a h", "rm -f h", "chmod 600 tally/stats.py", "truncate -s 0 tally/units.py",
    "mkfifo p", "rm -f p", "touch -d 2001-01-01 tally/text.py", "rm -rf tally/__pycache__", "mv d e", "rm -rf e",
    "rm tally/text.py", "mv tally/stats.py tally/moved.py", "ln a t && echo w >> t && rm t", "cp -r tests t2",
    "python -m compileall -q tally", "sed -i 's/def /def  /' tally/units.py",
]


@settings(max_examples=int(os.environ.get("ROLLFLOW_PROPERTY_EXAMPLES", 12)), deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(commands=st.lists(st.lists(st.sampled_from(OPERATIONS), min_size=1, max_size=3), min_size=1, max_size=5))
def test_any_commands_leave_the_changes_a_whole_walk_finds(envs, commands):
    env = envs()
    for command in commands:
        result = env.step(bash("; ".join(command) + "; true"))
        assert result.observation.startswith("[exit 0]"), (command, result.observation)
        assert env.manifest.changes == walked_whole(env), commands
    env.close()
