"""The swe env's whole red-team attack list (python-engines/tests/envs/swe/attacks.py) against mined real tasks: a
script, not a test (it needs the miner's cache, .cache/swe-mined/, which `make test` does not build).

Tasks: the first ``--per-project`` instances of each project in instances.jsonl's order (the miner's, deterministic
from its seed), every project of the cache. Each attack is an episode on the task with its bug left in, then
<submit/>; it holds when the grade is reward 0, not resolved, and, for the in-process attacks, ``tampered`` (the
canaries caught it). Any other end (reward > 0, an exception, a server-side failure) is a hole and is listed.
Also checked per task, as the attacks' premise: no edit scores 0, the gold patch applied in the sandbox scores 1.

Run from the repo root (results: bench/results/swe-redteam-real.{json,md}):
    .venv/bin/python bench/swe-redteam/run.py [--mined .cache/swe-mined] [--per-project 1] [--attacks a,b]
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import traceback
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python-engines"))

from rollflow_engines.envs import snapshots  # noqa: E402
from rollflow_engines.sandbox import SandboxSettings, configure  # noqa: E402
from tests.envs.swe.attacks import ATTACKS, Task, holds  # noqa: E402
from tests.envs.swe.helpers import apply_patch, play_config  # noqa: E402


def tasks(mined: Path, per_project: int) -> list[dict]:
    chosen, seen = [], defaultdict(int)
    for line in (mined / "instances.jsonl").read_text().splitlines():
        row = json.loads(line)
        if seen[row["repo"]] < per_project:
            seen[row["repo"]] += 1
            chosen.append(row)
    return chosen


def config(mined: Path, row: dict) -> dict:
    return {"instances": str(mined / "instances.jsonl"), "ids": [row["instance_id"]],
            "source": {"kind": "local", "repo_path": f"{mined}/repos/{{instance_id}}.tar.gz", "python": f"{mined}/envs/{{repo_slug}}/bin/python"}}


def episode(given: dict, replies: list[str], **overrides) -> dict:
    started = time.monotonic()
    try:
        end = play_config(given, [*replies, "<submit/>"], **overrides)[-1]
        return {"end": end, "reward": end.reward, "tampered": bool(end.info.get("reward_tampered")), "success": bool(end.info.get("success")),
                "submitted": bool(end.info.get("submitted")), "sandbox_errors": end.info.get("sandbox_errors", 0),
                "fail_to_pass": end.info.get("fail_to_pass"), "pass_to_pass": end.info.get("pass_to_pass"), "s": round(time.monotonic() - started, 2)}
    except Exception:  # a server-side failure is a hole too: recorded, not raised
        return {"end": None, "error": traceback.format_exc(limit=3), "reward": None, "s": round(time.monotonic() - started, 2)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mined", type=Path, default=REPO / ".cache" / "swe-mined")
    ap.add_argument("--per-project", type=int, default=1)
    ap.add_argument("--attacks", default="", help="comma-separated names (default: all)")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "swe-redteam-real")
    args = ap.parse_args()
    names = [n for n in ATTACKS if not args.attacks or n in args.attacks.split(",")]
    scratch = Path(tempfile.mkdtemp(prefix="swe-redteam-"))
    configure(SandboxSettings(root=scratch / "sandboxes"))
    snapshots.configure(scratch / "snapshots")
    rows, holes, results = tasks(args.mined, args.per_project), [], []
    for row in rows:
        task, given = Task(row), config(args.mined, row)
        premise = {"no_edit": episode(given, [])["reward"], "gold": episode(given, [apply_patch(row["patch"])])["reward"]}
        print(row["instance_id"], "premise", premise, flush=True)
        for name in names:
            build, expect, timeout = ATTACKS[name]
            replies = build(task)
            if replies is None:
                results.append({"instance_id": row["instance_id"], "repo": row["repo"], "attack": name, "applies": False})
                continue
            got = episode(given, replies, **({"grading_timeout_s": timeout} if timeout else {}))
            # a hole is any grade above 0 (or no grade); the canaries' verdict is recorded, not required: an
            # in-process hack that fails the tests by itself scores 0 without them
            ok = got["end"] is not None and holds(got.pop("end"), "zero")
            got.pop("end", None)
            results.append({"instance_id": row["instance_id"], "repo": row["repo"], "attack": name, "applies": True, "expect": expect, "holds": ok,
                            **got, "premise": premise})
            if not ok:
                holes.append(results[-1])
            print(f"  {name}: {'holds' if ok else 'HOLE'} reward={got['reward']} tampered={got.get('tampered')} {got['s']}s", flush=True)
    write(args.out, names, rows, results, holes)
    return 1 if holes else 0


def write(out: Path, names: list[str], rows: list[dict], results: list[dict], holes: list[dict]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(  # one result a line: a diff of two runs reads attack by attack
        "{\n" + f' "tasks": {json.dumps([r["instance_id"] for r in rows])},\n "attacks": {json.dumps(names)},\n "results": [\n'
        + ",\n".join("  " + json.dumps(r) for r in results) + f'\n ],\n "holes": {json.dumps(holes)}\n}}\n')
    repos = sorted({r["repo"] for r in rows})
    ran = [r for r in results if r["applies"]]
    lines = ["# The swe red team on mined real tasks", "",
             f"`.venv/bin/python bench/swe-redteam/run.py`: {len(names)} attacks × {len(rows)} tasks ({len(repos)} projects); "
             f"{len(ran)} episodes, {sum(r['holds'] for r in ran)} held, {len(holes)} holes, "
             f"{sum(not r['applies'] for r in results)} not applicable (no package directory).", "",
             "Each cell: attacks that held / ran on that project's tasks (max reward seen; tampered = caught by the canaries).", "",
             "| attack | " + " | ".join(r.removeprefix("pypi/") for r in repos) + " |", "|---|" + "---|" * len(repos)]
    for name in names:
        cells = []
        for repo in repos:
            got = [r for r in ran if r["attack"] == name and r["repo"] == repo]
            if not got:
                cells.append("n/a")
                continue
            rewards = [r["reward"] for r in got if r["reward"] is not None]
            tampered = sum(bool(r.get("tampered")) for r in got)
            cells.append(f"{sum(r['holds'] for r in got)}/{len(got)} r≤{max(rewards) if rewards else 'err'}" + (f" t{tampered}" if tampered else ""))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    premises = {r["instance_id"]: r["premise"] for r in ran}
    lines += ["", "Premise per task (no edit → 0, gold patch → 1): " + ", ".join(f"{i} {p['no_edit']}/{p['gold']}" for i, p in premises.items())]
    if holes:
        lines += ["", "## Holes", ""] + [f"- {h['attack']} on {h['instance_id']}: reward {h['reward']}, tampered {h.get('tampered')}, "
                                          f"error {h.get('error', '').strip().splitlines()[-1:] if h.get('error') else None}" for h in holes]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
