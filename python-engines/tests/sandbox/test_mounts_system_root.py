"""mounts.filesystem_args with ``system_root`` (source kind image, envs/swe/images.py): on the host's root the bwrap
arguments are byte for byte what they were before the parameter existed; on an image's root file system only the
system directories' sources change (and the host's Python directories are not bound), everything else is the same."""
import os
from pathlib import Path

from rollflow_engines.sandbox import mounts
from rollflow_engines.sandbox.mounts import SYSTEM_DIRS, TOP_LEVEL, WORKSPACE, filesystem_args, python_dirs

BINDS = {"/grading": Path("/srv/hidden"), "/opt/task-env": Path("/data/envs/task")}


def _before(workspace: Path, tmp: Path, ro_binds: dict[str, Path] | None = None) -> list[str]:
    """filesystem_args as of commit 914a4bf, before system_root (copied verbatim, the docstring left out)."""
    args: list[str] = []
    for d in SYSTEM_DIRS:
        args += ["--ro-bind", d, d]
    for top in TOP_LEVEL:
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    args += ["--proc", "/proc", "--dev", "/dev", "--bind", str(workspace), WORKSPACE, "--bind", str(tmp), "/tmp"]
    python = python_dirs()
    inside = [*python, *(Path(p) for p in ro_binds or {})]
    for parent in sorted({p for d in inside for p in d.parents if p != Path("/")}, key=lambda p: len(p.parts)):
        args += ["--perms", "0755", "--dir", str(parent)]
    for d in python:
        args += ["--ro-bind", str(d.resolve()), str(d)]
    for inside, host in (ro_binds or {}).items():
        args += ["--ro-bind", str(host), inside]
    args += ["--remount-ro", "/", "--chdir", WORKSPACE]
    return args


def test_on_the_host_s_root_the_arguments_are_as_before(tmp_path):
    ws, tmp = tmp_path / "ws", tmp_path / "tmp"
    for binds in (None, BINDS):
        assert filesystem_args(ws, tmp, binds) == _before(ws, tmp, binds)
        assert filesystem_args(ws, tmp, binds, Path("/")) == _before(ws, tmp, binds)


def test_on_an_image_s_root_the_system_comes_from_it_and_nothing_else_changes(tmp_path):
    root = tmp_path / "rootfs"
    for d in ("usr/bin", "usr/lib", "etc"):
        (root / d).mkdir(parents=True)
    (root / "bin").symlink_to("usr/bin")
    (root / "lib").symlink_to("usr/lib")
    (root / "sbin").mkdir()  # a real directory, bound
    ws, tmp = tmp_path / "ws", tmp_path / "tmp"
    args = filesystem_args(ws, tmp, BINDS, root)
    system = args[:args.index("--proc")]
    assert system == ["--ro-bind", f"{root}/usr", "/usr", "--ro-bind", f"{root}/etc", "/etc", "--symlink", "usr/bin", "/bin",
                      "--ro-bind", f"{root}/sbin", "/sbin", "--symlink", "usr/lib", "/lib"]  # no lib32/lib64 in this root
    host_python = {str(d) for d in mounts.python_dirs()}
    assert not host_python & set(args)  # the image is the whole system: the server's own Python is not bound
    rest = args[args.index("--proc"):]
    assert rest == ["--proc", "/proc", "--dev", "/dev", "--bind", str(ws), WORKSPACE, "--bind", str(tmp), "/tmp",
                    "--perms", "0755", "--dir", "/opt", "--ro-bind", "/srv/hidden", "/grading", "--ro-bind", "/data/envs/task", "/opt/task-env",
                    "--remount-ro", "/", "--chdir", WORKSPACE]
