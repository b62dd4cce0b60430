"""What one turn of a trajectory costs Temporal, per way of running it, on the cluster and on the dev server.

Called by bench/turn-cost/run.sh with a target's stack up (`measure`), then once over the targets (`report`).
The workload is bench/capacity/capacity.yaml (latency_sim, zero engine latency, α = 0: every trajectory started
is trained, so a run of S steps of B trajectories of T turns is N = S·B trajectories and N·T turns). The kinds
are config overrides of it:

    activity  env_calls activity: a workflow per trajectory, its env calls activities
    turn      env_calls turn (auto's choice in a trajectory workflow since #26): the same, each turn's generation and
              env step one activity (playTurn), the reset and the sample write local activities
    local     env_calls local: the same, its env calls local activities (markers in the trajectory's history)
    group     prompt replication off: a group's G trajectories as one generateGroupTurn request with n = G, its env
              calls local (env_calls auto). One request serves single-turn groups only (src/workflows/group.ts:
              with max_steps > 1 the group runs trajectory workflows), so this kind is measured at T = 1 only
              and reported per trajectory, not per turn.
    lockstep  rollout_mode lockstep: the groups of a step advance turn by turn in one workflow, calls activities

For each kind two runs differ only in T (TURNS, default 1 and 5): per turn = (q(T₂) − q(T₁)) / (N·(T₂ − T₁)).
Per trajectory at T = 1 is q(T = 1) / N: it includes the run's own costs (run workflow, train steps, weight syncs),
the same for every kind.

Measured around each run (from `rollflow run` to the workflow's result read with `temporal workflow result`, no
status polls, then 3 s for the server's counters to be reported): the history service's persistence writes
(`persistence_requests` of write operations, from the server's Prometheus endpoint), and CPU seconds of the
server, the worker and PostgreSQL (/proc). Then, outside the measured window, the histories of the run's
workflows (histories.cjs): events, workflow tasks (WorkflowTaskCompleted), activity tasks
(ActivityTaskScheduled), local-activity markers and the state transitions the server counted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: costs.py, shared with bench/capacity
from costs import HZ, pg_ticks, pid_in, prometheus, run_to_completion, sh, ticks, worker_pid  # noqa: E402

CONFIG = "bench/capacity/capacity.yaml"
ENV = "custom_envs.instant"
KINDS = {
    "activity": [f"{ENV}.env_calls=activity"],
    "turn": [f"{ENV}.env_calls=turn"],
    "local": [f"{ENV}.env_calls=local"],
    "group": ["is_num_return_sequences_expand=false"],  # env_calls stays auto: local in a one-request group
    "lockstep": ["rollout_mode=lockstep"],  # env_calls auto: activities in lockstep
}
SINGLE_TURN = {"group"}
# Persistence operations that write; the rest (Get…, List…, Read…, Assert…) read.
WRITE_PREFIXES = ("Create", "Update", "Set", "ConflictResolve", "Append", "Delete", "RangeDelete", "Complete", "RangeComplete", "Add", "Put", "Upsert", "Record", "Trim", "Fork", "Save", "Init", "Lease", "Renew")
# The quantities of a run, in report order, with how to print them.
QUANTITIES = {
    "history_events": "history events",
    "workflow_tasks": "workflow tasks",
    "activity_tasks": "activity tasks",
    "local_activity_markers": "local-activity markers",
    "persistence_writes": "persistence writes (history)",
    "eager_activities": "activities dispatched eagerly",
    "state_transitions": "state transitions",
    "cpu_server_ms": "server CPU ms",
    "cpu_worker_ms": "worker CPU ms",
    "cpu_postgres_ms": "PostgreSQL CPU ms",
}


class Target:
    """Where the server's pid, metrics and (on the cluster) PostgreSQL's data directory are."""

    def __init__(self, a: argparse.Namespace):
        self.name, self.metrics_port = a.target, a.metrics_port
        self.server_pid = Path(a.server_pid_file)
        self.pgdata = Path(a.pgdata) if a.pgdata else None
        self.state = Path(os.environ["ROLLFLOW_STATE"])

    def snapshot(self) -> dict[str, float]:
        """Counters now: persistence requests by metric/service/operation, and CPU seconds by process."""
        out: dict[str, float] = {}
        for name, labels, value in prometheus(self.metrics_port):
            if name in ("persistence_requests", "visibility_persistence_requests"):
                key = f"{name}/{labels.get('service_name')}/{labels.get('operation')}"
                out[key] = out.get(key, 0.0) + value
            elif name == "activity_eager_execution":  # the server handed the activity to the worker in its reply
                out["eager_activities"] = out.get("eager_activities", 0.0) + value
        server, worker = pid_in(self.server_pid), worker_pid(self.state)
        out["pid_server"], out["pid_worker"] = server, worker  # a restart between two snapshots spoils their CPU
        out["cpu_server_s"] = ticks(server) / HZ
        out["cpu_worker_s"] = ticks(worker) / HZ
        if self.pgdata:
            out["cpu_postgres_s"] = pg_ticks(self.pgdata) / HZ
        return out


def is_history_write(key: str) -> bool:
    """key: metric/service/operation, as snapshot() names persistence requests."""
    prefix = "persistence_requests/history/"
    return key.startswith(prefix) and key.removeprefix(prefix).startswith(WRITE_PREFIXES)


def measure(t: Target, kind: str, turns: int, steps: int, groups: int, sets: list[str], address: str, cli: str) -> dict:
    run_id = f"turn-cost-{t.name}-{kind}-t{turns}-{int(time.time() * 1000)}"
    overrides = [f"max_steps={steps}", f"train_env_manager.num_env_groups={groups}", f"{ENV}.max_steps={turns}", f"{ENV}.env_config.turns={turns}", *KINDS[kind], *sets]
    time.sleep(2)  # the last run's leftovers (visibility, task deletions) out of this window
    before, load_before = t.snapshot(), os.getloadavg()[0]
    wall = run_to_completion(CONFIG, run_id, overrides, address, cli)
    time.sleep(3)  # counters reach the server's metrics endpoint on a reporting interval, not at once
    after = t.snapshot()
    delta = {k: after[k] - before.get(k, 0.0) for k in after}
    if delta["pid_server"] or delta["pid_worker"]:
        raise RuntimeError(f"{run_id}: the server or the worker was restarted during the run; its CPU cannot be measured")
    h = json.loads(sh("node", "bench/turn-cost/histories.cjs", address, run_id))
    trajectories = steps * groups * 4
    totals = {
        "history_events": h["history_events"],
        "workflow_tasks": h["events"].get("WORKFLOW_TASK_COMPLETED", 0),
        "activity_tasks": h["events"].get("ACTIVITY_TASK_SCHEDULED", 0),
        "local_activity_markers": sum(n for name, n in h["markers"].items() if "local_activity" in name),
        "persistence_writes": sum(v for k, v in delta.items() if is_history_write(k)),
        "eager_activities": delta.get("eager_activities", 0.0),
        "state_transitions": h["state_transitions"],
        **{f"cpu_{p}_ms": 1000 * delta[f"cpu_{p}_s"] for p in ("server", "worker", "postgres") if f"cpu_{p}_s" in delta},
    }
    requests = {k: v for k, v in sorted(delta.items()) if "/" in k and v}  # metric/service/operation
    return {"run_id": run_id, "kind": kind, "turns": turns, "trajectories": trajectories, "wall_s": round(wall, 1), "load1_before": load_before, "load1_after": os.getloadavg()[0], "totals": totals, "persistence_requests": requests, "histories": h}


def idle(t: Target, seconds: float) -> dict[str, float]:
    """CPU ms a second of each process with no run going: the part of a window's CPU that is not the run's."""
    before = t.snapshot()
    time.sleep(seconds)
    after = t.snapshot()
    return {k.removesuffix("_s") + "_ms_per_s": 1000 * (after[k] - before[k]) / seconds for k in after if k.startswith("cpu_")}


def per_unit(runs: list[dict]) -> dict[str, dict]:
    """Per kind: per turn (from the two runs of different T) and per trajectory at T = 1."""
    out = {}
    for kind in KINDS:
        mine = sorted((r for r in runs if r["kind"] == kind), key=lambda r: r["turns"])
        if not mine:
            continue
        lo, hi, n = mine[0], mine[-1], mine[0]["trajectories"]
        unit = {"per_trajectory_t1": {q: v / n for q, v in lo["totals"].items()}} if lo["turns"] == 1 else {}
        if hi["turns"] > lo["turns"]:
            unit["per_turn"] = {q: (hi["totals"][q] - lo["totals"][q]) / (n * (hi["turns"] - lo["turns"])) for q in lo["totals"]}
        out[kind] = unit
    return out


def now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def main_measure(a: argparse.Namespace) -> int:
    sets = [line for line in Path(a.sets).read_text().splitlines() if line]
    address = next(s.split("=", 1)[1] for s in sets if s.startswith("temporal.address="))
    cli, t = sh("temporal/ensure-cli.sh"), Target(a)
    # One small run first, not measured: the worker's first workflows and activities (code loaded and compiled,
    # connections and task queues made) would otherwise fall in the first measured run.
    measure(t, a.kinds.split(",")[0], 1, 1, 2, sets, address, cli)
    data = {"target": t.name, "date": now(), "commit": sh("git", "rev-parse", "--short", "HEAD"), "steps": a.steps, "batch": a.groups * 4, "idle": idle(t, a.idle_s), "runs": []}
    for kind in a.kinds.split(","):
        for turns in [1] if kind in SINGLE_TURN else a.turns:
            r = measure(t, kind, turns, a.steps, a.groups, sets, address, cli)
            print(f"turn-cost: {t.name} {kind} T={turns}: {r['wall_s']} s, {json.dumps(r['totals'])}", file=sys.stderr)
            data["runs"].append(r)
    data["unit"] = per_unit(data["runs"])
    if a.sizes:
        data["curve"] = curve(t, a, sets, address, cli)
    if t.pgdata:
        data["postgres"] = sh("temporal/cluster.sh", "sql", "temporal", "-c", "SHOW server_version")
    Path(a.out).write_text(json.dumps(data, indent=2) + "\n")
    return 0


def curve(t: Target, a: argparse.Namespace, sets: list[str], address: str, cli: str) -> list[dict]:
    """The cost curve (#26 item 3): one run per size, a single step of N trajectories in flight at once (α = 0), of the
    first kind at the larger T; trajectories/s is N over the run's wall time, CPU a turn the window's CPU over N·T."""
    kind, turns, runs = a.kinds.split(",")[0], a.turns[-1], []
    for n in a.sizes:
        r = measure(t, kind, turns, 1, n // 4, sets, address, cli)
        r.pop("histories")  # thousands of workflows: the totals keep what the curve needs
        r["in_flight"] = n
        print(f"turn-cost curve: {t.name} {kind} N={n} T={turns}: {r['wall_s']} s, {json.dumps(r['totals'])}", file=sys.stderr)
        runs.append(r)
    return runs


def curve_table(runs: list[dict]) -> list[str]:
    """The cost curve: per size, trajectories/s and the CPU of a turn (the run's CPU ÷ N·T, so a trajectory's own costs and
    the run's are spread over its turns)."""
    kind, turns = runs[0]["kind"], runs[0]["turns"]
    parts = [p for p in ("server", "worker", "postgres") if f"cpu_{p}_ms" in runs[0]["totals"]]
    lines = [f"### Cost curve: kind `{kind}`, T = {turns}, one step of N trajectories all in flight", "",
             "| in flight N | wall s | trajectories/s | " + " | ".join(f"{p} CPU ms a turn" for p in parts) + " | server + worker ms a turn | load before / after |",
             "|---:|---:|---:|" + "---:|" * len(parts) + "---:|---|"]
    for r in runs:
        per_turn = {p: r["totals"][f"cpu_{p}_ms"] / (r["trajectories"] * turns) for p in parts}
        lines.append(f"| {r['in_flight']} | {r['wall_s']} | {r['trajectories'] / r['wall_s']:.1f} | " + " | ".join(f"{per_turn[p]:.1f}" for p in parts)
                     + f" | {per_turn['server'] + per_turn['worker']:.1f} | {r['load1_before']:.1f} / {r['load1_after']:.1f} |")
    return lines


def table(unit: dict, key: str, kinds: list[str], quantities: list[str]) -> list[str]:
    lines = ["| kind | " + " | ".join(QUANTITIES[q] for q in quantities) + " |", "|---|" + "---:|" * len(quantities)]
    for kind in kinds:
        row = unit[kind].get(key)
        lines.append(f"| {kind} | " + " | ".join(f"{row[q]:,.1f}" if row else "–" for q in quantities) + " |")
    return lines


def report(data: dict) -> str:
    targets = data["targets"]
    runs = [r for t in targets.values() for r in t["runs"]]
    loads = [x for r in runs for x in (r["load1_before"], r["load1_after"])]
    lines = [
        "# The cost of a turn, per part (issue #26)",
        "",
        f"Command: `{data['command']}` (targets started {data['date']}; commit {data['commit']})",
        "",
        f"Machine: {os.cpu_count()} cores, shared (load average 1 min {min(loads):.1f}–{max(loads):.1f} at the runs' starts and ends).",
        "Workload: bench/capacity/capacity.yaml (latency_sim, zero engine latency, α = 0, groups of 4), "
        f"{next(iter(targets.values()))['steps']} steps of B = {next(iter(targets.values()))['batch']}: N = {runs[0]['trajectories']} trajectories a run.",
        "Per turn = the difference of two runs that differ only in turns T, ÷ (N·ΔT); per trajectory = a T = 1 run ÷ N, "
        "which includes the run's own costs (run workflow, train steps, weight syncs), the same for every kind.",
        "Persistence writes: the history service's `persistence_requests` of write operations (the server's Prometheus "
        "endpoint); the operations counted are listed below. CPU: /proc, from `rollflow run` to the run's result + 3 s.",
        "",
    ]
    for name, t in targets.items():
        kinds = list(t["unit"])
        quantities = [q for q in QUANTITIES if all(q in r["totals"] for r in t["runs"])]
        about = {
            "cluster": f"`temporal/cluster.sh`: Temporal server 1.29.1 (one process, 4 history shards) on PostgreSQL {t.get('postgres', '')}, synchronous_commit on.",
            "dev": "`temporal/dev-server.sh` (`temporal server start-dev`, Temporal server 1.29.1): SQLite runs inside the server process, so server CPU includes SQLite's; there is no separate database CPU.",
        }[name]
        lines += [f"## Target `{name}`", "", about, "", "### Per turn", ""]
        lines += table(t["unit"], "per_turn", kinds, quantities)
        lines += ["", "`group` has no per-turn row: a one-request group is single-turn only.", "", "### Per trajectory at T = 1", ""]
        lines += table(t["unit"], "per_trajectory_t1", kinds, quantities)
        lines += ["", "### The runs", "", "| kind | T | trajectories | wall s | load before / after | " + " | ".join(QUANTITIES[q] for q in quantities) + " |", "|---|---:|---:|---:|---|" + "---:|" * len(quantities)]
        for r in t["runs"]:
            lines.append(f"| {r['kind']} | {r['turns']} | {r['trajectories']} | {r['wall_s']} | {r['load1_before']:.1f} / {r['load1_after']:.1f} | " + " | ".join(f"{r['totals'][q]:,.0f}" for q in quantities) + " |")
        if t.get("curve"):
            lines += ["", *curve_table(t["curve"])]
        writes = sorted({k.split("/")[2] for r in t["runs"] for k in r["persistence_requests"] if is_history_write(k)})
        lines += ["", f"History write operations counted: {', '.join(writes)}.", "Idle CPU (ms a second, 10 s with no run, before the runs): " + ", ".join(f"{k.removeprefix('cpu_').removesuffix('_ms_per_s')} {v:.1f}" for k, v in t["idle"].items()) + ".", ""]
    notes = Path(data["out_dir"]) / f"{data['name']}.notes.md"
    if notes.exists():
        lines += [notes.read_text().rstrip(), ""]
    return "\n".join(lines)


def main_report(a: argparse.Namespace) -> int:
    targets: dict[str, dict] = {}
    for f in a.files:  # a target's measurements, or a report's JSON made before (to remake its .md)
        d = json.loads(Path(f).read_text())
        targets.update(d["targets"] if "targets" in d else {d["target"]: d})
    # The measurements' date and commit, not the report's: the report is made again when the notes change.
    dates, commits = sorted(d["date"] for d in targets.values()), sorted({d["commit"] for d in targets.values()})
    data = {"command": a.command, "date": ", ".join(dates), "commit": ", ".join(commits), "out_dir": a.out_dir, "name": a.name, "targets": targets}
    out = Path(a.out_dir)
    (out / f"{a.name}.json").write_text(json.dumps(data, indent=2) + "\n")
    (out / f"{a.name}.md").write_text(report(data))
    print(f"turn-cost: wrote {out / a.name}.md and .json", file=sys.stderr)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure", help="the runs on one target, whose stack is up")
    m.add_argument("--target", required=True, choices=["cluster", "dev"])
    m.add_argument("--sets", required=True, help="file of config overrides, one key=value a line")
    m.add_argument("--server-pid-file", required=True)
    m.add_argument("--metrics-port", required=True, type=int)
    m.add_argument("--pgdata", help="PostgreSQL's data directory (cluster)")
    m.add_argument("--kinds", default=",".join(KINDS))
    m.add_argument("--turns", default=[1, 5], type=lambda s: sorted(int(x) for x in s.split(",")), help="two turn counts, e.g. 1,5")
    m.add_argument("--steps", default=4, type=int)
    m.add_argument("--groups", default=16, type=int, help="groups of 4 a step")
    m.add_argument("--idle-s", default=10, type=float)
    m.add_argument("--sizes", default=[], type=lambda s: [int(x) for x in s.split(",") if x], help="the cost curve's in-flight sizes (multiples of 4), e.g. 32,64,128")
    m.add_argument("--out", required=True)
    r = sub.add_parser("report", help="turn-cost.md and .json from the targets' measurements")
    r.add_argument("files", nargs="+", help="measure's outputs, or a turn-cost.json to make its .md again")
    r.add_argument("--name", default="turn-cost", help="the report's files: <name>.md, <name>.json, read <name>.notes.md")
    r.add_argument("--out-dir", default="bench/results")
    r.add_argument("--command", default="bench/turn-cost/run.sh")
    a = ap.parse_args()
    return main_measure(a) if a.cmd == "measure" else main_report(a)


if __name__ == "__main__":
    sys.exit(main())
