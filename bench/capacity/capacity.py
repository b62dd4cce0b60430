"""Temporal's cost of a trajectory, a turn and a train step on the PostgreSQL cluster, and what a large run needs.

Called by bench/capacity/run.sh with the cluster and the stack up. Four runs of capacity.yaml (α = 0, zero
engine latency) that differ in one thing at a time:

    base    S = 4 steps,  B = 64, T = 1 turn     (256 trajectories)
    turns   S = 4,        B = 64, T = 5          (256 trajectories, 4 more turns each)
    steps   S = 16,       B = 16, T = 1          (256 trajectories, 12 more steps)
    more    S = 8,        B = 64, T = 1          (512 trajectories, 4 more steps)

Each quantity q of a run is modelled as q = fixed + S·step + N·trajectory + N·T·turn (N = S·B trajectories),
which the four runs determine exactly: turn = (turns − base)/(4·256), step = (steps − base)/12,
trajectory = (more − base − 4·step − 256·turn)/256. `trajectory` is a one-turn trajectory's cost less one turn.

Measured around each run (from start to completion, read with `temporal workflow result`, no status polls):
history events, state transitions and history bytes of the run's workflows (the visibility records), PostgreSQL's
committed transactions, rows inserted + updated + deleted and WAL bytes of the cluster (pg_stat_database,
pg_stat_wal), and CPU seconds of the server, PostgreSQL (postmaster, its reaped and its live backends) and the
worker (/proc).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: costs.py, shared with bench/turn-cost
from costs import HZ, pg_ticks, pid_in, prometheus, run_to_completion, sh, ticks, worker_pid  # noqa: E402

STATE = Path(os.environ["ROLLFLOW_STATE"])
CLUSTER = Path(os.environ["TEMPORAL_CLUSTER_DIR"])

RUNS = {  # name: (steps S, groups of 4 per step, turns T)
    "base": (4, 16, 1),
    "turns": (4, 16, 5),
    "steps": (16, 4, 1),
    "more": (8, 16, 1),
}
QUANTITIES = ["history_events", "state_transitions", "history_bytes", "pg_transactions", "pg_row_writes", "pg_wal_bytes", "shard_write_s", "cpu_server_s", "cpu_postgres_s", "cpu_worker_s"]
# The history service's writes of workflow state, each made holding its shard's lock (one at a time per shard).
SHARD_WRITES = ("CreateWorkflowExecution", "UpdateWorkflowExecution", "ConflictResolveWorkflowExecution", "SetWorkflowExecution")


def sql(db: str, query: str) -> list[str]:
    return sh("temporal/cluster.sh", "sql", db, "-c", query).splitlines()


def server_metrics() -> dict[str, float]:
    """Sums over the history service's shard writes, and the time requests waited for a shard's lock, from the
    server's Prometheus endpoint (cluster.sh: frontend port + 8)."""
    keys = {
        "persistence_latency_sum": "shard_write_s", "persistence_latency_count": "shard_writes",
        "semaphore_latency_sum": "shard_lock_wait_s", "semaphore_latency_count": "shard_lock_waits",
    }
    out = dict.fromkeys(keys.values(), 0.0)
    for name, labels, value in prometheus(int(os.environ["TEMPORAL_CLUSTER_PORT"]) + 8):
        if name.startswith("persistence_latency_"):
            mine = labels.get("service_name") == "history" and labels.get("namespace") == "default" and labels.get("operation") in SHARD_WRITES
        else:
            mine = name.startswith("semaphore_latency_") and labels.get("operation") == "ShardInfo"
        if mine and name in keys:
            out[keys[name]] += value
    return out


def snapshot() -> dict[str, float]:
    txn, rows = 0, 0
    for line in sql("temporal", "SELECT xact_commit, tup_inserted + tup_updated + tup_deleted FROM pg_stat_database WHERE datname IN ('temporal', 'temporal_visibility')"):
        t, r = line.split("|")
        txn, rows = txn + int(t), rows + int(r)
    wal = int(sql("temporal", "SELECT wal_bytes FROM pg_stat_wal")[0].split(".")[0])
    return {
        **server_metrics(),
        "pg_transactions": txn,
        "pg_row_writes": rows,
        "pg_wal_bytes": wal,
        "cpu_server_s": ticks(pid_in(CLUSTER / "server.pid")) / HZ,
        "cpu_postgres_s": pg_ticks(CLUSTER / "pg") / HZ,
        "cpu_worker_s": ticks(worker_pid(STATE)) / HZ,
    }


def histories(run_id: str) -> dict[str, dict[str, int]]:
    """Per workflow type: workflows, history events, state transitions, history bytes, once all are closed."""
    where = f"workflow_id = '{run_id}' OR workflow_id LIKE '{run_id}/%'"
    for _ in range(600):  # visibility records are written after the close, asynchronously
        if int(sql("temporal_visibility", f"SELECT count(*) FROM executions_visibility WHERE ({where}) AND close_time IS NULL")[0]) == 0:
            break
        time.sleep(0.1)
    else:
        raise RuntimeError(f"{run_id}: visibility still lists running workflows 60 s after the run completed")
    rows = sql("temporal_visibility", f"SELECT workflow_type_name, count(*), sum(history_length), sum(state_transition_count), sum(history_size_bytes) FROM executions_visibility WHERE {where} GROUP BY 1 ORDER BY 1")
    out = {}
    for line in rows:
        name, n, events, transitions, size = line.split("|")
        out[name] = {"workflows": int(n), "history_events": int(events), "state_transitions": int(transitions), "history_bytes": int(size)}
    return out


def measure(name: str, sets: list[str], address: str, cli: str) -> dict:
    steps, groups, turns = RUNS[name]
    run_id = f"capacity-{name}-{int(time.time())}"
    overrides = [f"max_steps={steps}", f"train_env_manager.num_env_groups={groups}", f"custom_envs.instant.max_steps={turns}", f"custom_envs.instant.env_config.turns={turns}", *sets]
    # PostgreSQL's statistics are flushed by each backend about once a second: let the last run's settle.
    time.sleep(2)
    before, load_before = snapshot(), os.getloadavg()[0]
    wall = run_to_completion("bench/capacity/capacity.yaml", run_id, overrides, address, cli)
    time.sleep(2)
    after = snapshot()
    by_type = histories(run_id)
    totals = {k: after[k] - before[k] for k in after}
    for k in ("history_events", "state_transitions", "history_bytes"):
        totals[k] = sum(t[k] for t in by_type.values())
    return {"run_id": run_id, "steps": steps, "batch": groups * 4, "turns": turns, "trajectories": steps * groups * 4, "wall_s": round(wall, 1), "load1_before": load_before, "load1_after": os.getloadavg()[0], "totals": totals, "by_workflow_type": by_type}


def fit(runs: dict[str, dict]) -> dict[str, dict[str, float]]:
    """Per quantity: the marginal cost of a turn, a train step and a trajectory, and the fixed cost of a run."""
    out = {}
    for q in QUANTITIES:
        v = {name: runs[name]["totals"][q] for name in RUNS}
        turn = (v["turns"] - v["base"]) / (256 * 4)
        step = (v["steps"] - v["base"]) / 12
        trajectory = (v["more"] - v["base"] - 4 * step - 256 * turn) / 256
        fixed = v["base"] - 4 * step - 256 * trajectory - 256 * turn
        out[q] = {"turn": turn, "step": step, "trajectory": trajectory, "fixed": fixed}
    return out


def project(unit: dict[str, dict[str, float]], write_s: float, in_flight: int, turns: int = 20, step_s: float = 60) -> dict[str, float]:
    """Rates for `in_flight` trajectories of `turns` turns at α = 1 (in flight = 2B), one train step every step_s.
    `write_s`: the mean time of one shard write, as measured (it is the database's commit latency, not a constant)."""
    batch = in_flight / 2
    per_s = lambda q: (batch * (unit[q]["trajectory"] + turns * unit[q]["turn"]) + unit[q]["step"]) / step_s  # noqa: E731
    return {
        "batch": batch,
        "turns_per_s": batch * turns / step_s,
        "history_events_per_s": per_s("history_events"),
        "state_transitions_per_s": per_s("state_transitions"),
        "pg_transactions_per_s": per_s("pg_transactions"),
        "pg_row_writes_per_s": per_s("pg_row_writes"),
        "pg_wal_mb_per_s": per_s("pg_wal_bytes") / 1e6,
        "history_gb_per_day": per_s("history_bytes") * 86400 / 1e9,
        # A shard makes one write at a time: kept 50 % busy, it takes 0.5 s of writes a second. A state transition
        # is one write; the fitted write time per unit would carry the load's swings in latency, so the mean is used.
        "shards_at_half_busy": per_s("state_transitions") * write_s / 0.5,
        "server_cores": per_s("cpu_server_s"),
        "postgres_cores": per_s("cpu_postgres_s"),
        "worker_cores": per_s("cpu_worker_s"),
    }


def report(data: dict) -> str:
    u, runs = data["unit"], data["runs"]
    f = lambda x, d=1: f"{x:,.{d}f}"  # noqa: E731
    lines = [
        "# Capacity: what Temporal spends per trajectory, turn and train step, and what a large run needs",
        "",
        f"Command: `{data['command']}` ({data['date']})",
        "",
        f"Machine: {os.cpu_count()} cores, shared (load average 1 min {min(r['load1_before'] for r in runs.values()):.1f}–{max(r['load1_after'] for r in runs.values()):.1f} at the runs' starts and ends); "
        f"cluster: `temporal/cluster.sh` (Temporal server 1.29.1, one process, {data['shards']} history shards; PostgreSQL {data['postgres']}, synchronous_commit on).",
        "",
        "## The runs",
        "",
        "| run | steps | B | turns | trajectories | wall s | history events | state transitions | PG transactions | PG row writes | WAL MB | shard writes: mean ms | shard lock wait: mean ms | CPU s server / PostgreSQL / worker |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, r in runs.items():
        t = r["totals"]
        lines.append(
            f"| {name} | {r['steps']} | {r['batch']} | {r['turns']} | {r['trajectories']} | {r['wall_s']} | {t['history_events']:,} | {t['state_transitions']:,} | {t['pg_transactions']:,} | {t['pg_row_writes']:,} | {t['pg_wal_bytes'] / 1e6:.1f} | "
            f"{1000 * t['shard_write_s'] / max(t['shard_writes'], 1):.1f} | {1000 * t['shard_lock_wait_s'] / max(t['shard_lock_waits'], 1):.1f} | {t['cpu_server_s']:.1f} / {t['cpu_postgres_s']:.1f} / {t['cpu_worker_s']:.1f} |"
        )
    lines += [
        "",
        "## Per unit (solved from the four runs: q = fixed + S·step + N·trajectory + N·T·turn)",
        "",
        "| quantity | per turn | per trajectory (less its turn) | per train step | fixed per run |",
        "|---|---:|---:|---:|---:|",
    ]
    names = {"history_events": "history events", "state_transitions": "state transitions (persistence writes of workflow state)", "history_bytes": "history bytes", "pg_transactions": "PostgreSQL transactions", "pg_row_writes": "PostgreSQL rows written", "pg_wal_bytes": "WAL bytes", "shard_write_s": "shard write ms (history's state writes, each holding its shard's lock)", "cpu_server_s": "server CPU ms", "cpu_postgres_s": "PostgreSQL CPU ms", "cpu_worker_s": "worker CPU ms"}
    for q in QUANTITIES:
        scale = 1000 if q.startswith("cpu") or q == "shard_write_s" else 1
        lines.append(f"| {names[q]} | {f(u[q]['turn'] * scale)} | {f(u[q]['trajectory'] * scale)} | {f(u[q]['step'] * scale)} | {f(u[q]['fixed'] * scale)} |")
    lines += ["", "History events by workflow type (base run): " + ", ".join(f"{k} {v['workflows']} × {v['history_events'] / v['workflows']:.1f}" for k, v in runs["base"]["by_workflow_type"].items()), ""]
    lines += [
        "## Projection: 20 turns a trajectory, α = 1 (in flight = 2B), one train step a minute",
        "",
        "| in flight | B | turns/s | history events/s | state transitions/s | PG transactions/s | PG rows/s | WAL MB/s | history GB/day | shards busy at 50 % | server cores | PostgreSQL cores | worker cores |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n, p in data["projection"].items():
        lines.append(
            f"| {int(n):,} | {p['batch']:,.0f} | {f(p['turns_per_s'], 0)} | {f(p['history_events_per_s'], 0)} | {f(p['state_transitions_per_s'], 0)} | {f(p['pg_transactions_per_s'], 0)} | {f(p['pg_row_writes_per_s'], 0)} | {f(p['pg_wal_mb_per_s'])} | {f(p['history_gb_per_day'])} | "
            f"{f(p['shards_at_half_busy'])} | {f(p['server_cores'])} | {f(p['postgres_cores'])} | {f(p['worker_cores'])} |"
        )
    lines += [
        "",
        f"Shards: state transitions/s × the mean shard write measured here ({data['shard_write_mean_ms']:.1f} ms: PostgreSQL's commit with"
        " synchronous_commit on this machine's disk) ÷ 0.5, so that each shard is busy half the time; a database that commits"
        " in less time needs proportionally fewer.",
        "Cores are this machine's (2 shared cores): CPU per unit measured at the load above, then multiplied out; no run at that size was made.",
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", required=True, help="file of config overrides, one key=value a line")
    ap.add_argument("--out-dir", default="bench/results")
    ap.add_argument("--command", default="bench/capacity/run.sh")
    a = ap.parse_args()
    sets = [line for line in Path(a.sets).read_text().splitlines() if line]
    address = next(s.split("=", 1)[1] for s in sets if s.startswith("temporal.address="))
    cli = sh("temporal/ensure-cli.sh")
    runs = {}
    for name in RUNS:
        runs[name] = measure(name, sets, address, cli)
        print(f"capacity: {name}: {json.dumps(runs[name]['totals'])}", file=sys.stderr)
    unit = fit(runs)
    write_s = sum(r["totals"]["shard_write_s"] for r in runs.values()) / sum(r["totals"]["shard_writes"] for r in runs.values())
    data = {
        "command": a.command,
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "shards": int((CLUSTER / "num-history-shards").read_text()),
        "postgres": sql("temporal", "SHOW server_version")[0],
        "runs": runs,
        "unit": unit,
        "shard_write_mean_ms": 1000 * write_s,
        "projection": {n: project(unit, write_s, n) for n in (1000, 10000)},
    }
    out = Path(a.out_dir)
    (out / "capacity.json").write_text(json.dumps(data, indent=2) + "\n")
    (out / "capacity.md").write_text(report(data))
    print(f"capacity: wrote {out / 'capacity.md'} and capacity.json", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
