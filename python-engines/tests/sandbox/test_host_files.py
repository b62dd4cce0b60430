"""The server's reads and writes of workspace files never follow a link, wait on a FIFO or read without bound."""
import os
import time

import pytest

from rollflow_engines.sandbox.host_files import WorkspaceFileError, read_text, write_text


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text("X = 1\n")
    return root


def test_a_regular_file_is_read_and_written(ws):
    assert read_text(ws, "pkg/mod.py", 100) == "X = 1\n"
    write_text(ws, "pkg/mod.py", "X = 2\n", None)
    write_text(ws, "new/deep/file.txt", "hi \ud800", None)  # a lone surrogate is written as '?'
    assert read_text(ws, "pkg/mod.py", 100) == "X = 2\n"
    assert read_text(ws, "./new/deep/file.txt", 100) == "hi ?"
    assert sorted(p.name for p in ws.iterdir()) == ["new", "pkg"]  # no staging file left behind


@pytest.mark.parametrize("shape, expected", [
    ("symlink_out", "is a symlink"), ("symlink_loop", "is a symlink"), ("dir_link", "not a directory"),
    ("fifo", "not a regular file"), ("directory", "is a directory|not a regular file"), ("missing", "does not exist"),
    ("big", "at most 100 are read"),
])
def test_hostile_shapes_are_refused_by_name(ws, tmp_path, shape, expected):
    secret = tmp_path / "secret"
    secret.write_text("host secret")
    target = ws / "f"
    if shape == "symlink_out":
        target.symlink_to(secret)
    elif shape == "symlink_loop":
        target.symlink_to("f")
    elif shape == "dir_link":
        (ws / "d").symlink_to(tmp_path)
        target = ws / "d" / "secret"
    elif shape == "fifo":
        os.mkfifo(target)
    elif shape == "directory":
        target.mkdir()
    elif shape == "big":
        target.write_bytes(b"x" * 101)
    rel = str(target.relative_to(ws))
    started = time.monotonic()
    with pytest.raises(WorkspaceFileError, match=expected):
        read_text(ws, rel, 100)
    assert time.monotonic() - started < 30  # a FIFO was never waited on (a hang would be caught here, not timed)


@pytest.mark.parametrize("rel, expected", [
    ("../escape", "outside"), ("/etc/passwd", "outside"), ("a\x00b", "NUL"), ("x" * 300, "longer than 255"),
    ("a/" * 600, "characters long"), ("", "empty"), (".", "workspace itself"),
])
def test_bad_paths_are_refused_before_any_system_call(ws, rel, expected):
    with pytest.raises(WorkspaceFileError, match=expected):
        read_text(ws, rel, 100)
    with pytest.raises(WorkspaceFileError, match=expected):
        write_text(ws, rel, "x", None)


def test_a_write_replaces_a_planted_link_never_follows_it(ws, tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("host secret")
    (ws / "link").symlink_to(secret)
    with pytest.raises(WorkspaceFileError, match="not a regular file"):
        write_text(ws, "link", "pwned", None)
    (ws / "d").symlink_to(tmp_path)
    with pytest.raises(WorkspaceFileError, match="not a directory"):
        write_text(ws, "d/secret", "pwned", None)
    os.mkfifo(ws / "fifo")
    with pytest.raises(WorkspaceFileError, match="not a regular file"):
        write_text(ws, "fifo", "x", None)
    assert secret.read_text() == "host secret"


def test_the_walk_copies_regular_files_only_and_stops_at_each_cap(ws, tmp_path):
    from rollflow_engines.sandbox.host_files import WorkspaceOverLimit, text_files
    (ws / "link").symlink_to(tmp_path)
    (ws / "loop").symlink_to("loop")
    os.mkfifo(ws / "fifo")
    (ws / ".grading").mkdir()
    (ws / ".grading" / "x").write_text("skipped")
    caps = dict(max_entries=100, max_bytes=1000, max_seconds=60.0)
    assert text_files(ws, **caps, skip_dirs=frozenset({".grading"})) == {"pkg/mod.py": "X = 1\n"}
    for i in range(20):
        (ws / f"f{i}").write_text("")
    with pytest.raises(WorkspaceOverLimit, match="more than 10 files"):
        text_files(ws, **{**caps, "max_entries": 10})
    (ws / "big").write_bytes(b"x" * 2000)
    with pytest.raises(WorkspaceOverLimit, match="more than 1000 bytes"):
        text_files(ws, **caps)
    with pytest.raises(WorkspaceOverLimit, match="took more than 0 s"):
        text_files(ws, **{**caps, "max_seconds": 0.0})
