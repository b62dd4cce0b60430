"""Mining one project: mutations tried on a scratch copy of its tree, kept by real test runs, validated by the swe
env's own grader (docs/swe-mining.md).

For each mutation (picked by mutations.sites, in a seeded order that takes the kinds in turn):

1. the test files of the tests that call the mutated function (baseline.calls) run as the grading runs them;
   skipped when no test calls it or projects.json prices those files over the limit (quick_files.py: pinned
   numbers, never this machine's clock);
2. kept iff some baseline-passing tests fail (FAIL_TO_PASS) and some others in those failing tests' files still
   pass (PASS_TO_PASS), and the run stayed within MUTANT_CPU_S and MUTANT_WALL_S with every expected test reported;
3. the instance is then graded by envs/swe/grading.grade in the sandbox, twice: the gold patch applied with
   ``git apply`` to the base must resolve it; the base left as it is must not (and pass no FAIL_TO_PASS test).
"""
from __future__ import annotations

import hashlib
import io
import random
import shutil
import subprocess
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from ....sandbox import Limits, current
from ...common_ends import common_ends
from ..instances import Instance, junit_key
from . import statement, testrun
from .baseline import Baseline, source_files
from .mutations import KINDS, Mutation, changes_the_program, sites
from .projects import Project
from .quick_files import files_to_run

# A mutant's run is limited in CPU seconds, which a busy machine does not inflate, so a hang (a loop the mutation
# made endless) is told from a slow run the same way under any load. 60 s is 4x the most the pinned costs allow a
# run (15 s); the wall limit only catches hangs that burn no CPU (a wait, a sleep) and equals the grading's.
MUTANT_CPU_S = 60
MUTANT_WALL_S = 300
MAX_F2P = 50
MAX_P2P = 100
MAX_PER_FUNCTION = 2      # kept mutations of one function: spread the tasks over the code
GRADING_LIMITS = Limits(wall_s=300, cpu_s=300)


@dataclass
class Stats:
    tried: int = 0
    kept: int = 0
    validated: int = 0
    reasons: dict[str, int] = field(default_factory=dict)

    def drop(self, reason: str) -> None:
        self.reasons[reason] = self.reasons.get(reason, 0) + 1


def ordered(candidates: list[tuple[str, Mutation]], seed: int, name: str) -> list[tuple[str, Mutation]]:
    """The candidates in a seeded order that takes the kinds in turn (off-by-one sites outnumber the rest)."""
    rng = random.Random(int(hashlib.sha256(f"{seed}:{name}".encode()).hexdigest(), 16))
    by_kind = {k: [c for c in candidates if c[1].kind == k] for k in KINDS}
    for group in by_kind.values():
        rng.shuffle(group)
    out: list[tuple[str, Mutation]] = []
    while any(by_kind.values()):
        for kind in KINDS:
            if by_kind[kind]:
                out.append(by_kind[kind].pop())
    return out


CONTEXT = 3


def gold_patch(path: str, mutated: bytes, original: bytes) -> str:
    """A git-style unified diff that turns the mutated file back into the original: one hunk around the lines that
    differ, with 3 lines of context. (difflib's matcher treats frequent lines as junk and, in a module with two
    near-copies of a function, turned a one-line fix into a diff of 300 lines.)"""
    a, b = mutated.decode().splitlines(True), original.decode().splitlines(True)
    head, tail = common_ends(a, b)
    start, end_a, end_b = max(0, head - CONTEXT), len(a) - tail, len(b) - tail
    after = a[end_a:min(len(a), end_a + CONTEXT)]
    before = a[start:head]

    def lines(prefix: str, chunk: list[str]) -> str:
        return "".join(prefix + (line if line.endswith("\n") else line + "\n\\ No newline at end of file\n") for line in chunk)
    n_a, n_b = len(before) + (end_a - head) + len(after), len(before) + (end_b - head) + len(after)
    return (f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -{start + 1},{n_a} +{start + 1},{n_b} @@\n"
            + lines(" ", before) + lines("-", a[head:end_a]) + lines("+", b[head:end_b]) + lines(" ", after))


def tree_hash(tree: Path) -> str:
    """A content hash of a tree (paths and bytes), standing in for a commit id."""
    h = hashlib.sha1()
    for p in sorted(tree.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            h.update(p.relative_to(tree).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def write_tarball(tree: Path, top: str, dest: Path) -> None:
    """A reproducible .tar.gz of ``tree`` under one top-level directory (sorted, no times, no owners, no __pycache__)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for p in sorted(tree.rglob("*")):
            if "__pycache__" in p.parts or p.suffix == ".pyc" or p.is_symlink():
                continue
            info = tar.gettarinfo(str(p), f"{top}/{p.relative_to(tree).as_posix()}")
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            info.mode = 0o755 if p.is_dir() else 0o644
            if p.is_file():
                with p.open("rb") as f:
                    tar.addfile(info, f)
            else:
                tar.addfile(info)
    import gzip
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".tmp")
    with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz:
        gz.write(buf.getvalue())
    tmp.replace(dest)


def _clear_bytecode(tree: Path, rel: str) -> None:
    """A mutant and its original can have one size and one mtime second: the stale .pyc would be loaded."""
    cache = (tree / rel).parent / "__pycache__"
    stem = Path(rel).stem
    for pyc in cache.glob(f"{stem}.*.pyc") if cache.is_dir() else []:
        pyc.unlink()


def validate(instance: Instance, tarball: Path, python: str) -> tuple[bool, str]:
    """The swe env's grader on the gold-patched base (must resolve) and on the base (must not)."""
    from ..grading import grade
    from ..sources import Checkout, _prepared
    checkout, env = Checkout(tarball), _prepared(python)
    for label, patch in (("gold", instance.patch), ("no edit", None)):
        with current().open() as ws:
            checkout.materialize(ws.path)
            if patch is not None:
                done = subprocess.run(["git", "apply", "-"], cwd=ws.path, input=patch.encode(), capture_output=True, timeout=60,
                                      env={"PATH": "/usr/bin:/bin", "HOME": str(ws.path), "GIT_CONFIG_NOSYSTEM": "1",
                                           "GIT_CEILING_DIRECTORIES": str(ws.path.parent)})
                if done.returncode != 0:
                    return False, f"gold patch does not apply: {done.stderr.decode()[-300:]}"
            ws.adopt()
            g = grade(instance, checkout, env, {}, ws, GRADING_LIMITS)
        if label == "gold" and not g.resolved:
            return False, f"gold patch graded {g}"
        if label == "no edit" and (g.resolved or g.f2p_passed):
            return False, f"no edit graded {g}"
    return True, ""


def judge(expected: list[str], outcomes: dict) -> tuple[list[str], list[str], str]:
    """The keep rule on a mutant's run of the files it can affect. ``expected``: the tests of those files that pass at
    baseline. Returns (FAIL_TO_PASS candidates, PASS_TO_PASS candidates, why not kept or "")."""
    if any(junit_key(t) not in outcomes for t in expected):  # a collection error stops pytest's whole session
        return [], [], "tests not reported (collection broken)"
    failed = sorted(t for t in expected if outcomes[junit_key(t)].status == "failed")
    f2p_files = {t.split("::", 1)[0] for t in failed}
    still = sorted(t for t in expected if t.split("::", 1)[0] in f2p_files and outcomes[junit_key(t)].status == "passed")
    if not failed:
        return [], [], "breaks no test"
    if not still:
        return failed, [], "leaves no test passing in its files"
    return failed, still, ""


def mine_project(project: Project, tree: Path, python: str, base: Baseline, out_repos: Path, seed: int, max_kept: int,
                 max_tried: int, log) -> tuple[list[dict], Stats]:
    scratch = tree.parent / "scratch"
    if scratch.exists():
        shutil.rmtree(scratch)
    shutil.copytree(tree, scratch)
    passing = set(base.passing)
    test_seconds = dict(project.test_seconds)
    candidates = []
    for rel in source_files(tree):
        try:
            found = sites((tree / rel).read_bytes())
        except (SyntaxError, UnicodeDecodeError):
            continue
        candidates += [(rel, m) for m in found if f"{rel}:{m.def_line}" in base.calls]
    stats, rows, per_function = Stats(), [], {}
    for rel, m in ordered(candidates, seed, project.name):
        if stats.validated >= max_kept or stats.tried >= max_tried:
            break
        if per_function.get((rel, m.function), 0) >= MAX_PER_FUNCTION:
            continue
        callers = [t for t in base.calls[f"{rel}:{m.def_line}"] if t in passing]
        # A file priced over the limit is left out (pyparsing's test_unit.py): the task is then graded on the quick
        # files only, as its FAIL_TO_PASS and PASS_TO_PASS come from them alone.
        files = files_to_run(callers, test_seconds)
        if not files:
            stats.drop("no quick test calls it")
            continue
        original = (tree / rel).read_bytes()
        if not changes_the_program(m, original):
            continue
        stats.tried += 1
        mutated = m.apply(original)
        (scratch / rel).write_bytes(mutated)
        _clear_bytecode(scratch, rel)
        try:
            run = testrun.run_tests(scratch, python, files, timeout_s=MUTANT_WALL_S, cpu_s=MUTANT_CPU_S)
        finally:
            (scratch / rel).write_bytes(original)
            _clear_bytecode(scratch, rel)
        if run.timed_out:
            stats.drop("timed out")
            continue
        failed, still, reason = judge([t for t in passing if t.split("::", 1)[0] in files], run.outcomes)
        if reason:
            stats.drop(reason)
            continue
        rng = random.Random(m.key)
        f2p = sorted(rng.sample(failed, MAX_F2P)) if len(failed) > MAX_F2P else failed
        p2p = sorted(rng.sample(still, MAX_P2P)) if len(still) > MAX_P2P else still
        # A message that shows a module's repr names its file under this machine's scratch folder: repository-relative
        # instead, so the statement is the same wherever it is mined (and names no host path).
        row = _instance_row(project, rel, m, original, mutated, scratch, out_repos, f2p, p2p, len(failed),
                            [run.outcomes[junit_key(t)].message.replace(f"{scratch}/", "") for t in failed])
        stats.kept += 1
        ok, why = validate(_as_instance(row), out_repos / f"{row['instance_id']}.tar.gz", python)
        if not ok:
            stats.drop("failed validation")
            log(f"{project.name}: {row['instance_id']} dropped: {why}")
            (out_repos / f"{row['instance_id']}.tar.gz").unlink(missing_ok=True)
            continue
        stats.validated += 1
        per_function[(rel, m.function)] = per_function.get((rel, m.function), 0) + 1
        rows.append(row)
        log(f"{project.name}: kept {row['instance_id']} ({m.kind} in {rel}:{m.function}, F2P {len(f2p)}, P2P {len(p2p)}); "
            f"{stats.validated} validated of {stats.tried} tried")
    shutil.rmtree(scratch, ignore_errors=True)
    return rows, stats


def _instance_row(project: Project, rel: str, m: Mutation, original: bytes, mutated: bytes, scratch: Path, out_repos: Path,
                  f2p: list[str], p2p: list[str], failing: int, messages: list[str]) -> dict:
    (scratch / rel).write_bytes(mutated)
    try:
        commit = tree_hash(scratch)
        instance_id = f"{project.slug}-{commit[:10]}"
        write_tarball(scratch, f"{project.name}-{project.version}", out_repos / f"{instance_id}.tar.gz")
    finally:
        (scratch / rel).write_bytes(original)
    patch = gold_patch(rel, mutated, original)
    changed = sum(1 for line in patch.splitlines() if line.startswith("+") and not line.startswith("+++"))
    return {"instance_id": instance_id, "repo": project.repo, "base_commit": commit,
            "problem_statement": statement.write(project.name, rel, m.function, messages, failing),
            "patch": patch, "test_patch": "", "FAIL_TO_PASS": f2p, "PASS_TO_PASS": p2p, "split": project.split,
            "version": project.version, "mutation_kind": m.kind, "mutation_file": rel, "mutation_function": m.function,
            "mutation_line": m.line, "lines_changed": changed, "difficulty": "one-line" if changed == 1 else "multi-line"}


def _as_instance(row: dict) -> Instance:
    return Instance(row["instance_id"], row["repo"], row["base_commit"], row["problem_statement"], row["patch"], row["test_patch"],
                    tuple(row["FAIL_TO_PASS"]), tuple(row["PASS_TO_PASS"]), row["split"])
