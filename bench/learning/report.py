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
    "lake": ("FrozenLake 3x3 (multi-turn)", "async α=1"),
    "swe": ("SWE-lite tier 1", "async α=1"),
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
KEEP = ("step", "wall_s", "rollout/reward_mean", "staleness/dispatch_mean", "staleness/mean", "val/reward_mean")


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


def main() -> None:
    runs = load_runs()
    plot(runs)
    notes = (RESULTS / "learning.notes.md").read_text()
    title, _, rest = notes.partition("\n")
    (RESULTS / "learning.md").write_text(
        f"{title}\n\n<!-- written by bench/learning/report.py from learning-runs.jsonl and the runs' metrics; "
        f"edit learning.notes.md -->\n\n{table(runs)}\n![validation reward (markers) and training-batch reward "
        f"(faint) against wall-clock seconds](learning.png)\n{rest}")
    print(table(runs))


if __name__ == "__main__":
    main()
