"""Reward-vs-wall-clock plots and the results table of the learning runs.

    .venv/bin/python bench/learning/report.py

reads bench/results/learning-runs.jsonl (one line per `bench/learning/run.sh`
run: its --json summary, command, date and load) and, for each run, the
per-step records of runs/<exp>/<run id>/metrics.jsonl and validation.jsonl
(runs made before each run had its own directory: runs/<exp>/metrics.jsonl,
matched by run id); writes bench/results/learning.png (one panel per task) and
bench/results/learning.md: the table and the plot, then the hand-written
bench/results/learning.notes.md appended as is.

The runs' directories (runs/) are not committed: the report is drawn where
the runs were made, and the committed learning.md/png are its output.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(os.environ.get("LEARNING_RESULTS", ROOT / "bench" / "results"))  # another dir: to try the report on a copy

# run name prefix -> (task panel, legend label)
TASKS = {
    "arith-sync": ("arithmetic (single-digit addition)", "sync α=0"),
    "arith-async2": ("arithmetic (single-digit addition)", "async α=2"),
    "longtail-sync": ("arithmetic, long-tailed replies", "sync α=0"),
    "longtail-async2": ("arithmetic, long-tailed replies", "async α=2"),
    # The long-tail study: α = 2 with one change each (bench/learning/run.sh).
    "longtail-async2-accept": ("arithmetic, long-tailed replies", "async α=2, stale accepted"),
    "longtail-async2-decoupled": ("arithmetic, long-tailed replies", "async α=2, stale accepted, decoupled_ppo"),
    "longtail-async2-tis": ("arithmetic, long-tailed replies", "async α=2, stale accepted, tis"),
    "longtail-async2-seqmean": ("arithmetic, long-tailed replies", "async α=2, seq_mean_token_mean"),
    "longtail-async2-nopartial": ("arithmetic, long-tailed replies", "async α=2, no partial rollout"),
    "lake": ("FrozenLake 3x3 (multi-turn)", "async α=1"),
    "swe": ("SWE-lite tier 1", "async α=1"),
    "swe-mined": ("SWE on mined tasks (real projects)", "async α=1"),
}


def records(path: Path, run_id: str) -> list[dict]:
    if not path.exists():
        return []
    out: dict[int, dict] = {}
    for line in path.read_text().splitlines():
        r = json.loads(line)
        if r.get("run_id") == run_id:
            out[r["step"]] = r  # a retried write repeats a step: keep one
    return [out[k] for k in sorted(out)]


def run_dir(entry: dict, run_id: str) -> Path:
    """The run's own directory, runs/<exp>/<run id>; runs/<exp> for runs that shared it."""
    cmd = entry["command"].split()
    exp = next((a.split("=", 1)[1] for a in cmd if a.startswith("exp_name=")), None)
    if exp is None:
        config = (ROOT / entry["config"]).read_text()
        exp = next(line.split(":", 1)[1].strip() for line in config.splitlines() if line.startswith("exp_name:"))
    shared = ROOT / "runs" / exp
    own = shared / run_id
    return own if own.is_dir() else shared


# staleness/mean: runs recorded before the run named it staleness/dispatch_mean.
KEEP = ("step", "wall_s", "rollout/reward_mean", "staleness/dispatch_mean", "staleness/mean", "val/reward_mean",
        "train/response_length/mean", "rollout/tokens")


def load_runs() -> list[dict]:
    """The runs of learning-runs.jsonl with their curves. A run's curve is read from runs/ once and
    then kept in its jsonl line (the fields of KEEP), so the report redraws from the repo alone."""
    path = RESULTS / "learning-runs.jsonl"
    entries = [json.loads(line) for line in path.read_text().splitlines()]
    for entry in entries:
        run_id = entry["summary"].get("run_id")
        if run_id is None or "metrics" in entry:
            continue  # a failed run (its error is in the line), or a curve already kept
        d = run_dir(entry, run_id)
        entry["metrics"] = [{k: m[k] for k in KEEP if k in m} for m in records(d / "metrics.jsonl", run_id)]
        # Per-tag validation (val/<tag>/reward_mean) too: a run validated on a training split and a held-out one.
        entry["validation"] = [{k: x for k, x in v.items() if k in KEEP or k.startswith("val/")} for v in records(d / "validation.jsonl", run_id)]
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    return [e for e in entries if "metrics" in e]


def table(runs: list[dict]) -> str:
    lines = ["| task | mode | steps | B | validation reward: initial → final (Δ) | train-batch reward: step 0 → mean of last 5 | wall s | max staleness | command |",
             "|---|---|---:|---:|---|---|---:|---:|---|"]
    for r in runs:
        task, mode = TASKS.get(r["name"], (r["name"], ""))
        s, val, m = r["summary"], r["validation"], r["metrics"]
        v0, v1 = (val[0]["val/reward_mean"], val[-1]["val/reward_mean"]) if val else (float("nan"),) * 2
        last = [x["rollout/reward_mean"] for x in m[-5:]]
        b = round(s["samples_consumed"] / max(s["steps"], 1))
        lines.append(f"| {task} | {mode} | {s['steps']} | {b} | {v0:.3f} → {v1:.3f} ({v1 - v0:+.3f}) | "
                     f"{m[0]['rollout/reward_mean']:.3f} → {sum(last) / len(last):.3f} | {s['wall_s']:.0f} | {s['max_staleness']} | `{r['command']}` |")
    return "\n".join(lines) + "\n"


def plot(runs: list[dict]) -> None:
    panels = list(dict.fromkeys(TASKS.get(r["name"], (r["name"], ""))[0] for r in runs))
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
    for r in runs:
        task, mode = TASKS.get(r["name"], (r["name"], r["name"]))
        ax = axes[0][panels.index(task)]
        line, = ax.plot([x["wall_s"] for x in r["metrics"]], [x["rollout/reward_mean"] for x in r["metrics"]],
                        alpha=0.35, linewidth=1)
        tags = sorted({k for v in r["validation"] for k in v if k.startswith("val/") and k.endswith("/reward_mean") and k.count("/") == 2})
        if len(tags) > 1:  # one curve per validation split
            for tag, marker in zip(tags, "os^v"):
                ax.plot([x["wall_s"] for x in r["validation"]], [x[tag] for x in r["validation"]], marker=marker,
                        color=line.get_color(), label=f"{mode}: validation on {tag.split('/')[1]}")
        else:
            ax.plot([x["wall_s"] for x in r["validation"]], [x["val/reward_mean"] for x in r["validation"]],
                    marker="o", color=line.get_color(), label=f"{mode}: validation (train batches faint)")
    for ax, task in zip(axes[0], panels):
        ax.set_title(task)
        ax.set_xlabel("wall-clock seconds since the run started")
        ax.set_ylabel("mean reward")
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(RESULTS / "learning.png", dpi=110)


LONGTAIL = "arithmetic, long-tailed replies"


def seed_of(run: dict) -> int:
    """The run's seed: its --set seed=N, else the config's."""
    cmd = run["command"].split()
    given = next((a.split("=", 1)[1] for a in cmd if a.startswith("seed=")), None)
    if given is not None:
        return int(given)
    config = (ROOT / run["config"]).read_text()
    return int(next(line.split(":", 1)[1].split("#")[0] for line in config.splitlines() if line.startswith("seed:")))


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else float("nan")


def longtail_runs(runs: list[dict]) -> list[dict]:
    return [r for r in runs if TASKS.get(r["name"], ("",))[0] == LONGTAIL]


def longtail_table(runs: list[dict]) -> str:
    """One row per long-tail run: what each change did to the reply length, the reward and the wall time."""
    lines = ["| date | mode | seed | steps | validation: initial → final | trained reply length: first 5 → last 5 steps | dropped | wall s | load before → after | note |",
             "|---|---|---:|---:|---|---|---:|---:|---|---|"]
    for r in longtail_runs(runs):
        lengths = [x["train/response_length/mean"] for x in r["metrics"] if "train/response_length/mean" in x]
        length = f"{mean(lengths[:5]):.1f} → {mean(lengths[-5:]):.1f}" if lengths else "not recorded"
        val = r["validation"]
        v = f"{val[0]['val/reward_mean']:.3f} → {val[-1]['val/reward_mean']:.3f}" if val else "—"
        s = r["summary"]
        load = f"{r['load1_before']:.1f} → {r['load1_after']:.1f}" if r.get("load1_before") is not None else "—"
        note = ("shared the machine: excluded from the comparison" if r.get("shared_machine") else "") + (r.get("note") and f" {r['note']}" or "")
        lines.append(f"| {r['date'][:16]} | {TASKS[r['name']][1]} | {seed_of(r)} | {s['steps']} | {v} | {length} | {s.get('dropped', 0)} | "
                     f"{s['wall_s']:.0f} | {load} | {note.strip()} |")
    return "\n".join(lines) + "\n"


def compared(runs: list[dict]) -> list[dict]:
    """The sync-against-async seeds: 100 steps on the engines with width groups, each run alone on the machine."""
    return [r for r in longtail_runs(runs) if r["summary"]["steps"] == 100 and r.get("date", "") >= "2026-11-24T19:30"
            and not r.get("shared_machine") and r["validation"]]


def seeds_table(runs: list[dict], modes: tuple[str, ...] = ("longtail-sync", "longtail-async2-nopartial", "longtail-async2-accept")) -> str:
    """Each mode over its 100-step seeds run alone on the machine: final validation reward (mean, range)
    and wall time (mean, range), and each mode's wall time against sync's."""
    lines = ["| mode | seeds | final validation reward: mean (min – max) | wall s: mean (min – max) | wall time / sync's | "
             "ms per trained token | that / sync's |", "|---|---|---|---|---:|---:|---:|"]
    clean = {m: [r for r in compared(runs) if r["name"] == m] for m in modes}
    # Seconds per trained token: the run's speed apart from how long its replies grew (which varies by seed).
    per_token = lambda rs: 1000 * sum(r["summary"]["wall_s"] for r in rs) / sum(x.get("rollout/tokens", 0) for r in rs for x in r["metrics"])  # noqa: E731
    sync_wall = mean([r["summary"]["wall_s"] for r in clean[modes[0]]])
    sync_token = per_token(clean[modes[0]]) if clean[modes[0]] else float("nan")
    for m, rs in clean.items():
        if not rs:
            continue
        finals = [r["validation"][-1]["val/reward_mean"] for r in rs]
        walls = [r["summary"]["wall_s"] for r in rs]
        lines.append(f"| {TASKS[m][1]} | {', '.join(str(seed_of(r)) for r in rs)} | {mean(finals):.3f} ({min(finals):.3f} – {max(finals):.3f}) | "
                     f"{mean(walls):.0f} ({min(walls):.0f} – {max(walls):.0f}) | {mean(walls) / sync_wall:.2f} | {per_token(rs):.2f} | {per_token(rs) / sync_token:.2f} |")
    return "\n".join(lines) + "\n"


def plot_longtail(runs: list[dict]) -> None:
    """Validation reward against wall time, and the trained reply length against the step."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2))
    colours = {"longtail-sync": "tab:blue", "longtail-async2-nopartial": "tab:orange", "longtail-async2-accept": "tab:green"}
    styles = {1: "-", 2: "--", 3: ":"}
    for r in compared(runs):
        label = f"{TASKS[r['name']][1]}, seed {seed_of(r)}"
        style = {"color": colours.get(r["name"], "grey"), "linestyle": styles.get(seed_of(r), "-")}
        left.plot([x["wall_s"] for x in r["validation"]], [x["val/reward_mean"] for x in r["validation"]], marker="o", label=label, **style)
        lengths = [(x["step"], x["train/response_length/mean"]) for x in r["metrics"] if "train/response_length/mean" in x]
        right.plot([s for s, _ in lengths], [n for _, n in lengths], linewidth=1, label=label, **style)
    left.set(title="validation reward (100 steps)", xlabel="wall-clock seconds since the run started", ylabel="mean reward", ylim=(0, 1))
    right.set(title="trained reply length", xlabel="step", ylabel="mean tokens per reply")
    for ax in (left, right):
        ax.grid(alpha=0.3)
    left.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(RESULTS / "learning-longtail.png", dpi=110)


def main() -> None:
    runs = load_runs()
    plot(runs)
    plot_longtail(runs)
    notes = (RESULTS / "learning.notes.md").read_text()
    title, _, rest = notes.partition("\n")
    (RESULTS / "learning.md").write_text(
        f"{title}\n\n<!-- written by bench/learning/report.py from learning-runs.jsonl and the runs' metrics; "
        f"edit learning.notes.md -->\n\n{table(runs)}\n![validation reward (markers) and training-batch reward "
        f"(faint) against wall-clock seconds](learning.png)\n{rest}\n## The long-tail runs\n\nSync against the async variants run on three seeds, 100 steps, each run alone on the machine:\n\n{seeds_table(runs)}\n"
        f"Every long-tail run:\n\n{longtail_table(runs)}\n"
        f"![long-tail runs: validation reward against wall time, trained reply length against step](learning-longtail.png)\n")
    print(table(runs))


if __name__ == "__main__":
    main()
