"""The swe env's snapshot cost per step, on real tasks (a script for `make bench`, not a test).

Plays a scripted episode on each task, in the real sandbox, once with the snapshots in a directory and once in an
S3 store (a local versitygw, started here as the tests start it), and times, for every step: the whole step (the
env's step(), snapshot included), the snapshot when the step saves one (the walk and hashing, then the blobs and the
manifest written: only steps that run a command save one), the bytes written, the files hashed. The episode is an
agent's usual one: look around, run the tests (pytest's caches and .pyc files appear), view, apply the fix with git,
edit one line (the server's own write, no snapshot), run the tests again, submit. What a client does after losing
the episode is timed twice in a fresh env: right after the edit (restore git_apply's snapshot, send the edit again)
and at the end (restore the last snapshot).

Tasks: the mined instances (``--instances`` with the source templates the miner documents), and/or the in-code
tally project with ``--synthetic-mb`` MB of generated modules added to its repository (a tens-of-MB workspace).

Run from the repo root:
    .venv/bin/python bench/swe-snapshots/bench_swe_snapshots.py [--instances .cache/swe-mined/instances.jsonl]
        [--limit 8] [--synthetic-mb 30] [--out bench/results/swe-snapshots.json]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python-engines"))

from rollflow_engines import objects  # noqa: E402
from rollflow_engines.envs import snapshots  # noqa: E402
from rollflow_engines.envs.swe.env import SweConfig, SweEnv  # noqa: E402
from rollflow_engines.sandbox import SandboxSettings, configure as configure_sandbox  # noqa: E402
from tests.envs.swe.helpers import tree  # noqa: E402  (the tests' comparison of two workspaces)


def bash(script: str) -> str:
    return f"<bash>{script}</bash>"


def test_files(row: dict) -> list[str]:
    ids = [*row["FAIL_TO_PASS"], *row["PASS_TO_PASS"]]
    return sorted({i.split("::", 1)[0] for i in ids})[:3]


def episode(env: SweEnv, row: dict) -> list[tuple[str, str]]:
    """(label, action) of the scripted episode; the edit is built from the workspace as it stands when it comes."""
    tests = " ".join(shlex.quote(t) for t in test_files(row))
    run_tests = bash(f"python -m pytest -q -x {tests} 2>&1 | tail -3")
    patched = re.findall(r"^\+\+\+ b/(\S+)", row["patch"], re.M)
    return [("ls", bash("ls -la && find . -name '*.py' | wc -l")),
            ("grep", bash(f"grep -rn 'def ' {shlex.quote(patched[0])} | head -20" if patched else "grep -rn 'def ' . | head -20")),
            ("pytest", run_tests),
            ("view", f"<view>{patched[0]}</view>" if patched else "<view>README.md</view>"),
            ("git_apply", bash(f"cat > /tmp/fix.patch <<'EOF_PATCH'\n{row['patch']}EOF_PATCH\ngit apply /tmp/fix.patch && echo applied")),
            ("edit", None),  # built after git_apply: a unique def line of the patched file, a comment appended
            ("pytest_again", run_tests),
            ("submit", "<submit/>")]


def edit_action(env: SweEnv, row: dict) -> str:
    patched = re.findall(r"^\+\+\+ b/(\S+)", row["patch"], re.M)
    for rel in patched:
        path = env.ws.path / rel
        if not path.is_file():
            continue
        lines = path.read_text(errors="replace").splitlines(keepends=True)
        text = "".join(lines)
        for line in lines:
            if line.lstrip().startswith("def ") and line.rstrip().endswith(":") and text.count(line) == 1:
                return f'<replace path="{rel}"><old>{line}</old><new>{line.rstrip()}  # checked\n</new></replace>'
    return bash("true")


def play(cfg: SweConfig, row: dict, store: str) -> dict:
    """One episode; the per-step timings and what the snapshots cost."""
    env = SweEnv()
    steps, timings = [], {}
    original_save = SweEnv._snapshot_after_step  # the walk, the writes, the previous one removed

    def timed_save(self):
        t0 = time.perf_counter()
        saved = original_save(self)
        timings["snapshot_s"] = time.perf_counter() - t0
        return saved
    t0 = time.perf_counter()
    env.reset(0, cfg)
    reset_s = time.perf_counter() - t0
    base_entries = len(env.manifest.base)
    base_bytes = sum(e[1][3] for e in env.manifest.base.values() if e[1] and e[1][0] == "f")
    replayed: dict = {}
    try:
        SweEnv._snapshot_after_step = timed_save
        for label, action in episode(env, row):
            if action is None:
                action = edit_action(env, row)
                label = "edit" if action.startswith("<replace") else "true"  # no def line to edit: a command instead
            timings.clear()
            before = dict(env.manifest.stats)
            t0 = time.perf_counter()
            result = env.step(action)
            step_s = time.perf_counter() - t0
            after = env.manifest.stats
            saved = "snapshot_s" in timings
            wrote = saved and "+" not in (env.snapshot or "")  # a reference (nothing changed) writes no manifest
            record = {"label": label, "step_s": step_s, "saved": saved, "snapshot_s": timings.get("snapshot_s", 0.0), "done": result.done,
                      "hashed_files": after["hashed_files"] - before["hashed_files"], "hashed_bytes": after["hashed_bytes"] - before["hashed_bytes"],
                      "blobs_written": after["blobs_written"] - before["blobs_written"], "blob_bytes": after["blob_bytes"] - before["blob_bytes"],
                      "manifest_bytes": manifest_bytes(env, after["carried_bytes"] - before["carried_bytes"]) if wrote else 0, "wrote": wrote, "changed_paths": len(env.manifest.changes)}
            if result.done:
                record["reward"] = result.reward
            steps.append(record)
            if label == "edit" and env.snapshot and not saved:
                replayed = lost_after_edit(env, cfg, action)
            if result.done:
                break
        saved = next((s for s in reversed(steps) if s["saved"]), None)
        restore_s = None
        if env.snapshot:
            fresh = SweEnv()
            try:
                t0 = time.perf_counter()
                fresh.reset(0, cfg)
                reset_again_s = time.perf_counter() - t0
                t0 = time.perf_counter()
                fresh.restore(snapshots.load(env.snapshot))
                restore_s = time.perf_counter() - t0
            finally:
                fresh.close()
        return {"instance_id": row["instance_id"], "store": store, "reset_s": reset_s, "base_entries": base_entries, "base_bytes": base_bytes,
                "steps": steps, "restore_s": restore_s, "reset_before_restore_s": reset_again_s if env.snapshot else None,
                "last_snapshot": saved is not None, **replayed}
    finally:
        SweEnv._snapshot_after_step = original_save
        env.close()


def manifest_bytes(env: SweEnv, carried: int) -> int:
    """The size of the manifest the step stored: its JSON compressed as snapshots.save stores it, and the ``carried``
    bytes of file contents after it."""
    manifest = {"instance": env.instance.instance_id, "counters": env._counters(), "changes": env.manifest.changes,
                "blobs": sorted({e[2] for e in env.manifest.changes.values() if e and e[0] == "f"})}
    return len(zlib.compress(json.dumps(manifest).encode())) + carried


def lost_after_edit(env: SweEnv, cfg: SweConfig, edit: str) -> dict:
    """What a client does when the episode is lost right after the edit: a fresh env restores the last snapshot (the
    one before the edit) and is sent the edit again. Its time, and whether the workspace is the one the edit left."""
    fresh = SweEnv()
    try:
        fresh.reset(0, cfg)
        t0 = time.perf_counter()
        fresh.restore(snapshots.load(env.snapshot))
        restored_s = time.perf_counter() - t0
        fresh.step(edit)
        replayed_s = time.perf_counter() - t0
        return {"restore_after_edit_s": restored_s, "restore_and_edit_again_s": replayed_s,
                "same_workspace_after_edit_again": tree(fresh.ws.path) == tree(env.ws.path) and fresh.info() == env.info()}
    finally:
        fresh.close()


def untimed(observation: str) -> str:
    return re.sub(r"\b\d+(\.\d+)?s\b", "<t>s", observation)


def continuation(cfg: SweConfig, row: dict, lose_after: str = "edit") -> dict:
    """The episode played twice in lockstep: once whole, once lost after ``lose_after`` and continued by a fresh env
    restored from the last snapshot, then sent the actions after it again (what the bridge does after an env loss:
    after the edit, that is the edit). Same workspace, same grade?"""
    whole, resumed = SweEnv(), None
    try:
        whole.reset(0, cfg)
        script = episode(whole, row)
        results, sent, held = {}, [], 0
        for label, action in script:
            action = action or edit_action(whole, row)
            out = whole.step(action)
            sent.append(action)
            held = len(sent) if "snapshot" in out.info else held
            if resumed is not None:
                results[label] = (out, resumed.step(action))
            if label == lose_after:
                resumed = SweEnv()
                resumed.reset(0, cfg)
                resumed.restore(snapshots.load(whole.snapshot))
                for i, again in enumerate(sent[held:]):
                    results[f"{script[held + i][0]} (sent again)"] = (None, resumed.step(again))
                same_workspace_at_restore = tree(whole.ws.path) == tree(resumed.ws.path) and whole.info() == resumed.info()
            if out.done:
                break
        a, b = results["submit"]
        keys = ("success", "fail_to_pass", "pass_to_pass", "turn", "reward_tampered", "invalid_actions")
        return {"instance_id": row["instance_id"], "same_workspace_at_restore": same_workspace_at_restore,
                "same_workspace_at_end": tree(whole.ws.path) == tree(resumed.ws.path),
                # pytest prints its own wall time ("passed in 0.31s"): that is all two runs of one command may differ by
                "same_observations": all(untimed(x.observation) == untimed(y.observation) for x, y in results.values() if x is not None),
                "observations_differing_only_in_times": [k for k, (x, y) in results.items() if x is not None and x.observation != y.observation],
                "sent_again": [k for k, (x, _) in results.items() if x is None],
                "same_grade": (a.reward, {k: a.info[k] for k in keys}) == (b.reward, {k: b.info[k] for k in keys}),
                "reward": a.reward}
    finally:
        whole.close()
        if resumed is not None:
            resumed.close()


def create_latency_ms(where: Path, n: int = 200) -> float:
    """What creating a small file costs on the snapshot directory's disk now (a manifest's or a new blob's write is
    one): the median of ``n`` rounds of create, write and rename. It moves with the host's disk, so it is printed."""
    probe = Path(tempfile.mkdtemp(prefix=".create-probe-", dir=where))
    times = []
    try:
        for i in range(n):
            t0 = time.perf_counter()
            part = probe / f".{i}.part"
            part.write_bytes(b"x" * 512)
            os.replace(part, probe / str(i))
            times.append(time.perf_counter() - t0)
    finally:
        shutil.rmtree(probe, ignore_errors=True)
    return statistics.median(times) * 1e3


def start_versitygw(home: Path) -> tuple[str, callable]:
    """A local S3 store, as the tests' fixture starts it; its ref prefix and a stop function."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(ROLLFLOW_S3_ADDRESS=f"127.0.0.1:{port}", ROLLFLOW_S3_DIR=str(home), ROLLFLOW_S3_BUCKETS="rollflow")
    script = str(REPO / "object-store" / "versitygw.sh")

    def run(command: str) -> str:
        return subprocess.run([script, command], capture_output=True, text=True, timeout=60, env=env, check=True).stdout
    run("start")
    for line in run("env").splitlines():
        if line.startswith("export "):
            name, value = shlex.split(line)[1].split("=", 1)
            os.environ[name] = value
    objects.reset_client()
    return "s3://rollflow/swe-snapshots-bench", lambda: run("stop")


def synthetic(root: Path, mb: int) -> tuple[list[dict], dict]:
    """The tally project (tests/envs/swe/project.py) with ``mb`` MB of generated modules in its repositories."""
    sys.path.insert(0, str(REPO / "python-engines"))
    from tests.envs.swe.project import build, source
    built = build(root)
    rng = random.Random(0)
    for repo in (root / "repos").iterdir():
        if not repo.is_dir():
            continue
        vendor = repo / "vendor"
        vendor.mkdir()
        n = 0
        while n * 16 * 1024 < mb * 1024 * 1024:
            body = "".join(f"def f_{n}_{i}(x):\n    return x * {rng.randrange(1000)} + {rng.randrange(1000)}\n\n\n" for i in range(300))
            (vendor / f"m{n:05d}.py").write_text(body[:16 * 1024])
            n += 1
    rows = []
    for r in built.rows:
        rows.append({**r, **{k: json.loads(r[k]) if isinstance(r[k], str) else r[k] for k in ("FAIL_TO_PASS", "PASS_TO_PASS")}})
    return rows[:2], {"instances": str(built.instances_path), "source": source(built)}  # the directory ones (the third is a tarball)


def project_trees(work: Path, envs: Path, root: Path, limit: int) -> tuple[list[dict], dict]:
    """Until the miner's instances are out: one task per real project the miner unpacked (``<work>/<name>/tree``,
    copied here), its patch a comment appended to a def line of its largest module, its test ids the top-level tests of
    two of its test files. What a snapshot costs depends on the repository and the commands, not on the bug."""
    import difflib
    rows = []
    for unpacked in sorted(work.glob("*/tree"))[:limit]:
        name = unpacked.parent.name
        python = envs / f"pypi__{name}" / "bin" / "python"
        if not python.exists():
            continue
        dest = root / "repos" / name
        shutil.copytree(unpacked, dest, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
        modules = sorted((p for p in dest.rglob("*.py") if "test" not in str(p.relative_to(dest))), key=lambda p: -p.stat().st_size)
        tests = sorted(p for p in dest.rglob("test_*.py"))[:2]
        ids = [f"{t.relative_to(dest)}::{m}" for t in tests for m in re.findall(r"^def (test_\w+)", t.read_text(errors="replace"), re.M)][:20]
        if not modules or len(ids) < 2:
            continue
        module, rel = modules[0], str(modules[0].relative_to(dest))
        before = module.read_text(errors="replace").splitlines(keepends=True)
        after = list(before)
        i = next((i for i, line in enumerate(before) if line.startswith("def ") and line.rstrip().endswith(":")), 0)
        after[i] = after[i].rstrip("\n") + "  # bench\n"
        patch = "".join(difflib.unified_diff(before, after, f"a/{rel}", f"b/{rel}"))
        rows.append({"instance_id": name, "repo": f"pypi/{name}", "base_commit": "0" * 40, "problem_statement": "bench",
                     "patch": f"diff --git a/{rel} b/{rel}\n{patch}", "test_patch": "", "FAIL_TO_PASS": ids[:1], "PASS_TO_PASS": ids[1:]})
    path = root / "instances.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows, {"instances": str(path), "source": {"kind": "local", "repo_path": str(root / "repos" / "{instance_id}"),
                                                     "python": str(envs / "{repo_slug}" / "bin" / "python")}}


def summarize(episodes: list[dict]) -> dict:
    saves = [s for e in episodes for s in e["steps"] if s["saved"]]
    if not saves:
        return {}
    first = [next(s for s in e["steps"] if s["saved"]) for e in episodes if any(s["saved"] for s in e["steps"])]
    later = [s for s in saves if not any(s is f for f in first)]
    all_steps = [s for e in episodes for s in e["steps"]]

    def agg(group: list[dict]) -> dict:
        if not group:
            return {}
        return {"n": len(group), "wrote": sum(bool(s.get("wrote", s["saved"])) for s in group), "step_s_median": statistics.median(s["step_s"] for s in group),
                "snapshot_s_median": statistics.median(s["snapshot_s"] for s in group),
                "snapshot_s_max": max(s["snapshot_s"] for s in group),
                "ratio_of_sums": sum(s["snapshot_s"] for s in group) / sum(s["step_s"] for s in group),
                "ratio_median": statistics.median(s["snapshot_s"] / s["step_s"] for s in group),
                "ratio_max": max(s["snapshot_s"] / s["step_s"] for s in group),
                "bytes_written_median": statistics.median(s["blob_bytes"] + s["manifest_bytes"] for s in group),
                "bytes_written_max": max(s["blob_bytes"] + s["manifest_bytes"] for s in group),
                "hashed_files_median": statistics.median(s["hashed_files"] for s in group)}
    by_label = {}
    for s in all_steps:  # every step, those that save nothing (a view, an edit, the submission) at 0
        by_label.setdefault(s["label"], []).append(s)
    after_edit = [e for e in episodes if "restore_after_edit_s" in e]
    return {"saving_steps": agg(saves), "first_snapshot": agg(first), "later_snapshots": agg(later),
            "by_action": {k: agg(v) for k, v in by_label.items()},
            # the target's reading: snapshot time over the time of every step of the episodes (a step without a snapshot costs 0)
            "episode_ratio": sum(s["snapshot_s"] for s in saves) / sum(s["step_s"] for s in all_steps),
            "restore_s_median": statistics.median(e["restore_s"] for e in episodes if e["restore_s"] is not None),
            "restore_after_edit_s_median": statistics.median(e["restore_after_edit_s"] for e in after_edit) if after_edit else None,
            "restore_and_edit_again_s_median": statistics.median(e["restore_and_edit_again_s"] for e in after_edit) if after_edit else None,
            "same_workspace_after_edit_again": f"{sum(e['same_workspace_after_edit_again'] for e in after_edit)} of {len(after_edit)}",
            "reset_s_median": statistics.median(e["reset_s"] for e in episodes),
            "base_entries_median": statistics.median(e["base_entries"] for e in episodes),
            "base_mb_median": statistics.median(e["base_bytes"] for e in episodes) / 1e6}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--instances", help="a mined instances.jsonl")
    parser.add_argument("--repo-path", default=".cache/swe-mined/repos/{instance_id}")
    parser.add_argument("--python", default=".cache/swe-mined/envs/{repo_slug}/bin/python")
    parser.add_argument("--limit", type=int, default=8, help="mined tasks, one per project first")
    parser.add_argument("--synthetic-mb", type=int, default=0)
    parser.add_argument("--project-trees", help="the miner's work directory (.cache/swe-mined/work): one task per real project in it")
    parser.add_argument("--stores", default="dir,s3")
    parser.add_argument("--continuation", action="store_true", help="instead of timing: each task lost after the edit, "
                        "continued from its last snapshot (git_apply's) and the edit sent again, by a fresh env; compares "
                        "workspace, observations and grade")
    parser.add_argument("--out")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="swe-snapshots-bench-"))
    configure_sandbox(SandboxSettings(root=scratch / "sandboxes"))
    suites: list[tuple[str, list[dict], dict]] = []
    if args.instances:
        rows = []
        for line in Path(args.instances).read_text().splitlines():
            try:  # the miner may be appending: a last line half written is not a task yet
                rows.append(json.loads(line))
            except ValueError:
                continue
        for r in rows:
            for k in ("FAIL_TO_PASS", "PASS_TO_PASS"):
                r[k] = json.loads(r[k]) if isinstance(r[k], str) else r[k]
        by_repo: dict[str, list[dict]] = {}
        for r in rows:
            by_repo.setdefault(r["repo"], []).append(r)
        picked = []
        while len(picked) < args.limit and any(by_repo.values()):  # round robin over projects
            for repo in list(by_repo):
                if by_repo[repo] and len(picked) < args.limit:
                    picked.append(by_repo[repo].pop(0))
        suites.append(("mined", picked, {"instances": args.instances, "source": {"kind": "local", "repo_path": args.repo_path, "python": args.python}}))
    if args.project_trees:
        work = Path(args.project_trees)
        rows, base = project_trees(work, work.parent / "envs", scratch / "projects", args.limit)
        suites.append(("projects", rows, base))
    if args.synthetic_mb:
        rows, base = synthetic(scratch / "synthetic", args.synthetic_mb)
        suites.append((f"synthetic_{args.synthetic_mb}mb", rows, base))
    stop = None
    results: dict = {"load_before": os.getloadavg(), "uptime_before": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
                     "cpus": os.cpu_count(), "create_ms_before": create_latency_ms(scratch), "suites": {}}
    try:
        for store in args.stores.split(","):
            if store == "s3":
                prefix, stop = start_versitygw(scratch / "store")
                snapshots.configure(prefix)
            else:
                snapshots.configure(scratch / "snapshots")
            for name, rows, base in suites:
                episodes = []
                for row in rows:
                    cfg = SweConfig.model_validate({**base, "ids": [row["instance_id"]], "command_timeout_s": 120, "grading_timeout_s": 300})
                    try:
                        episodes.append({**continuation(cfg, row), "store": store, "steps": []} if args.continuation else play(cfg, row, store))
                    except Exception as e:  # a task that cannot be played is reported, not hidden
                        episodes.append({"instance_id": row["instance_id"], "store": store, "error": f"{type(e).__name__}: {e}"[:500], "steps": []})
                    print(json.dumps({k: v for k, v in episodes[-1].items() if k != "steps"}), flush=True)
                ok = [e for e in episodes if "error" not in e]
                summary = ({check: sum(bool(e[check]) for e in ok) for check in ("same_workspace_at_restore", "same_workspace_at_end",
                                                                                  "same_observations", "same_grade")} | {"episodes": len(ok)}
                           if args.continuation else summarize(ok))
                results["suites"][f"{name}/{store}"] = {"summary": summary, "episodes": episodes}
    finally:
        if stop:
            stop()
        results["load_after"] = os.getloadavg()
        results["create_ms_after"] = create_latency_ms(scratch)
        results["uptime_after"] = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
        shutil.rmtree(scratch, ignore_errors=True)
    text = json.dumps(results, indent=1)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(json.dumps({k: v["summary"] for k, v in results["suites"].items()}, indent=1))


if __name__ == "__main__":
    main()
