"""The gold-patch oracle and a no-op policy on every instance of an swe dataset (a script, not a test; numbers go
in reports): issue #25's targets "the oracle resolves 100 % of them; with no edit, 0 % is resolved".

Each instance is played through the real env, sandbox and grading (roles/inference/oracle_episode.py): the oracle
(``swe_oracle`` with ``instances``, solve_prob 1, the noise given), then a policy that submits at once (the oracle
at solve_prob 0 and flail_turns 1: a flailer whose first reply is its submit). Prints one JSON object: counts,
the instances the oracle left unresolved or the no-op resolved (with the last observation and the test counts),
seconds per episode, and the load average before and after.

Run from the repo root:
    .venv/bin/python bench/engines/swe_oracle_resolve.py --instances .cache/swe-mined/instances.jsonl \\
        --repo-path '.cache/swe-mined/repos/{instance_id}' --python '.cache/swe-mined/envs/{repo_slug}/bin/python' [--actions tool_calls]
Through container images (source kind image; images built by ``python -m rollflow_engines.envs.swe.image_build``):
    .venv/bin/python bench/engines/swe_oracle_resolve.py --instances .cache/swe-mined/instances.jsonl --source image \
        [--image 'localhost/rollflow-swe/{repo_slug}:{instance_id}'] [--cache-dir DIR]
which also times, per instance, the source's first resolve (the image unpacked, when it is new) and a second one.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ENGINES = Path(__file__).resolve().parents[2] / "python-engines"
sys.path.insert(0, str(ENGINES))

from rollflow_engines.envs.swe.env import SOURCES, SweConfig, SweEnv  # noqa: E402
from rollflow_engines.envs.swe.instances import Fields, load_dataset  # noqa: E402
from rollflow_engines.roles.inference import oracle_episode  # noqa: E402
from rollflow_engines.sandbox import SandboxSettings, configure  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--instances", required=True)
    ap.add_argument("--source", choices=["local", "image"], default="local")
    ap.add_argument("--repo-path", help="source local: the repository template")
    ap.add_argument("--python", help="the interpreter (source local: a template; image: the path inside, default /opt/env/bin/python)")
    ap.add_argument("--image", default="localhost/rollflow-swe/{repo_slug}:{instance_id}", help="source image: the image template")
    ap.add_argument("--cache-dir", help="source image: where images are unpacked (default: a fresh temporary directory)")
    ap.add_argument("--actions", choices=["xml", "tool_calls"], default="xml")
    ap.add_argument("--noise", type=float, default=0.0, help="wrong_file_prob, failed_edit_prob and wasted_command_prob")
    ap.add_argument("--limit", type=int, default=0, help="the first N instances only (0: all)")
    args = ap.parse_args()
    instances = os.path.abspath(args.instances)
    dataset = load_dataset(instances, "auto", Fields(), False)
    chosen = dataset.instances[:args.limit] if args.limit else dataset.instances
    configure(SandboxSettings(root=Path(tempfile.mkdtemp(prefix="swe-oracle-resolve-"))))
    if args.source == "local":
        source = {"kind": "local", "repo_path": os.path.abspath(args.repo_path), "python": os.path.abspath(args.python)}
    else:
        source = {"kind": "image", "image": args.image, "python": args.python or "/opt/env/bin/python",
                  "cache_dir": os.path.abspath(args.cache_dir or tempfile.mkdtemp(prefix="swe-rootfs-"))}
    oracle = {"kind": "swe_oracle", "instances": instances, "solve_prob": 1.0,
              **{k: args.noise for k in ("wrong_file_prob", "failed_edit_prob", "wasted_command_prob")}}
    no_op = {"kind": "swe_oracle", "instances": instances, "solve_prob": 0.0, "flail_turns": 1, "invalid_prob": 0.0}
    load_before = os.getloadavg()
    report: dict = {"instances": instances, "actions": args.actions, "noise": args.noise, "played": len(chosen),
                    "malformed_rows": len(dataset.problems), "oracle_resolved": 0, "no_op_resolved": 0, "failures": [], "seconds": [],
                    "source": source, "resolve_seconds": {"first": [], "again": []}}
    for n, instance in enumerate(chosen):
        config = SweConfig.model_validate({"instances": instances, "ids": [instance.instance_id], "source": source,
                                           "actions": args.actions, "max_turns": 30})
        resolve = SOURCES[config.source.kind][1]
        for when in ("first", "again"):  # an image's first resolve unpacks it; the second finds it in the cache
            started = time.monotonic()
            try:
                resolve(config.source, instance)[0].release()  # the episodes below take the image again
            except Exception:  # reported by the episodes below
                pass
            report["resolve_seconds"][when].append(round(time.monotonic() - started, 3))
        for name, policy in (("oracle", oracle), ("no_op", no_op)):
            started = time.monotonic()
            try:
                end = oracle_episode.play(SweEnv(), config, policy, seed=n, max_turns=30).end
                resolved, why = end.reward == 1.0, {"observation": end.observation[-300:], "fail_to_pass": end.info["fail_to_pass"],
                                                    "pass_to_pass": end.info["pass_to_pass"], "invalid_actions": end.info["invalid_actions"]}
            except Exception as e:  # a sandbox or dataset failure: reported per instance, the others go on
                resolved, why = False, {"error": f"{type(e).__name__}: {e}"[:500]}
            report["seconds"].append(round(time.monotonic() - started, 2))
            report[f"{name}_resolved"] += resolved
            if resolved != (name == "oracle"):
                report["failures"].append({"instance_id": instance.instance_id, "policy": name, **why})
    secs = sorted(report["seconds"])
    report["seconds"] = {"episodes": len(secs), "median": secs[len(secs) // 2] if secs else None, "max": secs[-1] if secs else None}
    for when, times in report["resolve_seconds"].items():
        times.sort()
        report["resolve_seconds"][when] = {"median": times[len(times) // 2] if times else None, "max": times[-1] if times else None}
    report["loadavg_before"], report["loadavg_after"] = load_before, os.getloadavg()
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
