"""The task miner's command line (docs/swe-mining.md):

    python -m rollflow_engines.envs.swe.mining [--out .cache/swe-mined] [--seed 0] [--max-kept 24] [--max-tried 120] [--jobs 2]

Writes OUT/instances.jsonl (SWE-bench's fields and the mutation's), OUT/repos/<instance_id>.tar.gz (each base state),
OUT/envs/<repo_slug>/bin/python (each project's prepared environment) and OUT/summary.json (counts, yield, times).
Cached: a project whose tasks were mined under the same key (projects.json, seed, limits, MINER_VERSION) is not
mined again, so a second run does nothing; the dataset is rewritten after each project, so a partial one is usable.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import hashlib
import json
import sys
import time
from pathlib import Path

from . import projects as P
from .baseline import Baseline, measure
from .quick_files import unpriced

MINER_VERSION = "2"  # 2: a fixed CPU limit per mutant, not 10x a measured time; no shared hypothesis database; statements without host paths
HELDOUT_TASKS_SHARE = 5  # one task in five of a training project (by a hash of its id) is held out


def cache_key(args: argparse.Namespace) -> str:
    text = P.PROJECTS_FILE.read_text() + json.dumps([MINER_VERSION, args.seed, args.max_kept, args.max_tried])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def split_of(row: dict) -> str:
    if row["split"] == "train" and int(hashlib.sha256(row["instance_id"].encode()).hexdigest(), 16) % HELDOUT_TASKS_SHARE == 0:
        return "heldout_tasks"
    return row["split"]


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def mine_one(project: P.Project, common: list[str], out: Path, key: str, seed: int, max_kept: int, max_tried: int) -> dict:
    """The project's tasks (a cached result when the key matches); returns its summary."""
    from .mine import mine_project
    work = out / "work" / project.name
    done = work / f"tasks-{key}.jsonl"
    summary_file = work / f"summary-{key}.json"
    if done.is_file() and summary_file.is_file():
        return json.loads(summary_file.read_text())
    started = time.monotonic()
    work.mkdir(parents=True, exist_ok=True)
    sdist = P.fetch(project, out / "sdists")
    tree = P.unpack(sdist, work / "tree")
    python = P.build_env(project, common, out / "envs" / project.slug)
    base_file = work / f"baseline-{hashlib.sha256(sdist.read_bytes()).hexdigest()[:12]}.json"
    if base_file.is_file():
        base = Baseline.load(base_file)
    else:
        base = measure(tree, python)
        base.save(base_file)
    log(f"{project.name}: baseline {len(base.passing)} passing tests in {len(base.files)} files")
    if not project.test_seconds:  # a new project: its costs are pinned once, by hand, from a measured baseline
        raise ValueError(f"{project.name}: projects.json pins no test_seconds; this machine's baseline measured "
                         f"{json.dumps({f: round(t, 2) for f, t in sorted(base.file_seconds.items())})}")
    if missing := unpriced(base.files, dict(project.test_seconds)):
        log(f"{project.name}: test files not in projects.json's test_seconds, never run: {missing}")
    rows, stats = mine_project(project, tree, python, base, out / "repos", seed, max_kept, max_tried, log)
    for row in rows:
        row["split"] = split_of(row)
    summary = {"project": project.name, "version": project.version, "split": project.split, "tasks": len(rows),
               "tried": stats.tried, "kept_by_tests": stats.kept, "validated": stats.validated, "dropped": stats.reasons,
               "baseline_tests": len(base.passing), "test_files": len(base.files), "seconds": round(time.monotonic() - started, 1)}
    done.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    summary_file.write_text(json.dumps(summary, sort_keys=True))
    return summary


def assemble(out: Path, projects: list[P.Project], key: str) -> tuple[int, list[dict]]:
    """OUT/instances.jsonl from every project mined under ``key``, in projects.json's order; rewritten only on change."""
    lines, summaries = [], []
    for project in projects:
        done = out / "work" / project.name / f"tasks-{key}.jsonl"
        if done.is_file():
            lines += done.read_text().splitlines(True)
            summaries.append(json.loads((out / "work" / project.name / f"summary-{key}.json").read_text()))
    text = "".join(lines)
    target = out / "instances.jsonl"
    if not target.is_file() or target.read_text() != text:
        tmp = target.with_name("instances.jsonl.tmp")
        tmp.write_text(text)
        tmp.replace(target)
        (out / "summary.json").write_text(json.dumps({"key": key, "miner_version": MINER_VERSION, "projects": summaries}, indent=1) + "\n")
    return len(lines), summaries


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rollflow_engines.envs.swe.mining", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=".cache/swe-mined", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-kept", type=int, default=24, help="validated tasks per project at most")
    parser.add_argument("--max-tried", type=int, default=120, help="mutations run per project at most")
    parser.add_argument("--jobs", type=int, default=2, help="projects mined at once (each runs one test process at a time)")
    parser.add_argument("--only", nargs="*", help="these projects of projects.json only")
    args = parser.parse_args(argv)
    out = args.out.resolve()  # resolved: pytest names tests relative to a rootdir it resolves (a link in the path renames them)
    out.mkdir(parents=True, exist_ok=True)
    projects, common = P.load()
    chosen = [p for p in projects if not args.only or p.name in args.only]
    key = cache_key(args)
    todo = [p for p in chosen if not (out / "work" / p.name / f"tasks-{key}.jsonl").is_file()]
    if not todo:
        count, _ = assemble(out, projects, key)
        log(f"nothing to do: {count} tasks cached under key {key} in {out}")
        return 0
    failures = 0
    with cf.ProcessPoolExecutor(max_workers=max(1, min(args.jobs, 2))) as pool:  # 2 at most: the machine's cores are shared
        futures = {pool.submit(mine_one, p, common, out, key, args.seed, args.max_kept, args.max_tried): p for p in todo}
        for future in cf.as_completed(futures):
            project = futures[future]
            try:
                s = future.result()
                log(f"{project.name}: {s['tasks']} tasks ({s['tried']} mutations tried, {s['seconds']} s)")
            except Exception as e:  # one project's failure (a download, a build) leaves the others' tasks
                failures += 1
                log(f"{project.name}: FAILED: {type(e).__name__}: {e}")
            assemble(out, projects, key)
    count, summaries = assemble(out, projects, key)
    log(f"{count} tasks from {sum(1 for s in summaries if s['tasks'])} projects in {out / 'instances.jsonl'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
