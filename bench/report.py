"""Markdown tables and PNG plots from `rollflow bench ... --out <file>.json` reports.

    .venv/bin/python bench/report.py w1 bench/results/w1*.json

writes bench/results/w1.md and bench/results/w1.png (next to the first
report). Each report becomes one section: the exact command, the machine,
the date and the load, then its table. Hand-written analysis lives in
<workload>.notes.md beside them and is appended as is.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def pct(x):
    return "n/a" if x is None else f"{100 * x:+.1f}%"


def num(x, fmt="{:.1f}"):
    return "n/a" if x is None else fmt.format(x)


def header(rep: dict) -> list[str]:
    m = rep["machine"]
    loads = [r.get("load1_before") for c in rep["cells"] for r in runs_of(c)]
    loads = [x for x in loads if x is not None]
    load = f"{min(loads):.1f}–{max(loads):.1f}" if loads else "n/a"
    return [
        f"Command: `{rep['command']}`",
        "",
        f"Machine: {m['nproc']} cores ({m['cpu_model']}), {m['mem_gib']} GiB; node {m['node']}; commit {m['git_commit']}.",
        f"Date: {rep['date']}. Load average (1 min) before each run: {load}; at start {rep['load1_start']:.1f}, at end {rep['load1_end']:.1f}"
        " (the bench's own work included; the notes say what else ran beside it).",
        "",
    ]


def runs_of(cell: dict) -> list[dict]:
    if "runs" in cell:
        return list(cell["runs"].values())
    if "modes" in cell:
        return [m["run"] for m in cell["modes"].values() if m.get("run")]
    return [cell["run"]] if "run" in cell else []


def w1_table(rep: dict) -> list[str]:
    rows = [
        "| B | (μ, σ) | step mean s | lockstep s | env_async s | measured speedup | DES speedup | measured/DES − 1 | DES lockstep s | DES env_async s | overhead env_async | overhead lockstep | activities/s (env_async) | worker processes | server error lines (lockstep / env_async) |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for c in rep["cells"]:
        rows.append(
            f"| {c['batch']} | ({c['mean_s']:g}, {c['std_s']:g}) | {c['env_step_mean_s']:g} | {num(c['baseline_makespan_s'])} | {num(c['rollflow_makespan_s'])} | "
            f"{num(c['measured_speedup'], '{:.2f}×')} | {c['des_speedup']:.2f}× | {pct(c['speedup_vs_des'])} | {c['des_baseline_makespan_s']:.1f} | "
            f"{c['des_rollflow_makespan_s']:.1f} | {pct(c['overhead'])} | {pct(c['baseline_overhead'])} | {num(c['rollflow_activities_per_s'])} | "
            f"{c.get('worker_processes', 'n/a')} | {' / '.join(str(r['logged']['server'].get('error', 0)) for r in c['runs'].values())} |"
        )
    errors = [f"- B={c['batch']} ({c['mean_s']:g},{c['std_s']:g}) {m}: {r['error']}" for c in rep["cells"] for m, r in c["runs"].items() if not r["ok"]]
    return rows + ([""] + errors if errors else []) + w1_store_table(rep)


def w1_store_table(rep: dict) -> list[str]:
    """The object store's cost (stores=[dir,s3]): each mode's rollout makespan on the bucket against the directory."""
    cells = [c for c in rep["cells"] if "store_cost" in c]
    if not cells:
        return []
    rows = [
        "",
        "The object store against the run directory (target: s3/dir − 1 ≤ +10% at B = 64):",
        "",
        "| B | (μ, σ) | mode | dir s | s3 (versitygw) s | s3/dir − 1 | s3 run error |",
        "|---:|---|---|---:|---:|---:|---|",
    ]
    for c in cells:
        for mode, d in c["store_cost"].items():
            run = d["run_s3"]
            rows.append(
                f"| {c['batch']} | ({c['mean_s']:g}, {c['std_s']:g}) | {mode} | {num(d['makespan_dir_s'])} | {num(d['makespan_s3_s'])} | {pct(d['cost'])} | {run.get('error', '')} |"
            )
    return rows


def w5_table(rep: dict) -> list[str]:
    rows = [
        "| α | samples/s | speedup over α=0 | DES samples/s | DES speedup | overhead | Prop. bound: min samples/s | trainer idle (DES) | rollout idle (DES) | weight sync s | max staleness |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for c in rep["cells"]:
        d = c["des"] or {}
        rows.append(
            f"| {c['alpha']:g} | {num(c['samples_per_s'], '{:.3f}')} | {num(c['measured_speedup'], '{:.2f}×')} | {num(d.get('samples_per_s'), '{:.3f}')} | "
            f"{num(c['des_speedup'], '{:.2f}×')} | {pct(c['overhead'])} | {num(d.get('bound_min_samples_per_s'), '{:.3f}')} | "
            f"{num(c['trainer_idle_ratio'], '{:.2f}')} ({num(d.get('trainer_idle_ratio'), '{:.2f}')}) | {num(c['rollout_idle_ratio'], '{:.2f}')} ({num(d.get('rollout_idle_ratio'), '{:.2f}')}) | "
            f"{num(c['sync_s'])} | {num(c['staleness_max'], '{:g}')} |"
        )
    d0 = next((c["des"] for c in rep["cells"] if c["des"]), None)
    if d0:
        rows += ["", f"Generation times of the runs: μ_gen = {d0['mu_gen_s']:.3f} s, L_gen = {d0['l_gen_s']:.3f} s (after time scale); "
                 f"Prop. 2: sync (colocated, eq. 8) step ≤ {d0['prop2_sync_step_s']:.2f} s, optimal β* = {d0['prop2_optimal_beta']:.2f}, "
                 f"speedup limit as α → ∞ = {d0['prop2_max_speedup_alpha_infinite']:.2f}×."]
    return rows


def w7_table(rep: dict) -> list[str]:
    rows = [
        "| in flight | makespan s | DES s | overhead | trajectories/s | activities/s | sustained | failed groups | server warn/error lines | worker warn/error lines | server CPU s | worker CPU s | error |",
        "|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    for c in rep["cells"]:
        if c.get("skipped"):
            rows.append(f"| {c['in_flight']} | | | | | | no | | | | | | {c['skipped']} |")
            continue
        e, r = c["errors"], c["run"]
        logged = lambda d: sum(d.values())  # noqa: E731
        rows.append(
            f"| {c['in_flight']} | {num(c['makespan_s'])} | {c['des_makespan_s']:.1f} | {pct(c['overhead'])} | {num(c['trajectories_per_s'])} | {num(c['activities_per_s'])} | "
            f"{'yes' if c['sustained'] else 'no'} | {e['failed_groups']} | {logged(e['server_logged'])} | {logged(e['worker_logged'])} | {r['cpu_s']['server']} | {r['cpu_s']['worker']} | {e['run'] or ''} |"
        )
    return rows + w7_delay_table(rep)


def w7_delay_table(rep: dict) -> list[str]:
    """Where each run's time over the DES went (the bench's `orchestration`, read from the run's histories), when it has it."""
    cells = [c for c in rep["cells"] if isinstance(c.get("orchestration"), dict)]
    if not cells:
        return []
    rows = [
        "",
        "Where the time over the DES went, from each run's histories (seconds after the run dispatched its first group; a "
        "trajectory's delay is its end less the time its activities executed):",
        "",
        "| in flight | trajectory started: mean / max | its workflow tasks queued: mean | delay a trajectory: mean / p90 | the last to end: started at, tasks queued, delay |",
        "|---:|---:|---:|---:|---:|",
    ]
    for c in cells:
        o = c["orchestration"]
        if "error" in o:
            rows.append(f"| {c['in_flight']} | {o['error']} | | | |")
            continue
        st, q, d, last = o["start_offset"], o["task_wait"], o["delay"], o["last"]
        rows.append(f"| {c['in_flight']} | {st['mean_s']:.2f} / {st['max_s']:.2f} | {q['mean_s']:.2f} | {d['mean_s']:.2f} / {d['p90_s']:.2f} | "
                    f"{last['start_offset_s']:.2f}, {last['task_wait_s']:.2f}, {last['delay_s']:.2f} |")
    return rows


def w4_table(rep: dict) -> list[str]:
    rows = [
        "| P × n | servers | time scale | n per request s | replicated s | measured speedup | DES speedup | measured/DES − 1 | DES n per request s | DES replicated s "
        "| overhead replicated | overhead n per request | DES n per request, 100 other arrival orders s | DES speedup, same lengths | mean / max tokens | requests sent over (p50 / last) s, n per request · replicated |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|---|",
    ]
    for c in rep["cells"]:
        same = c.get("des_same_lengths") or {}
        ramp = c.get("dispatch_ramp") or {}
        ramp_txt = " · ".join(f"{r['p50_s']:.1f} / {r['last_s']:.1f}" if r else "n/a" for r in (ramp.get("n_per_request"), ramp.get("replicated")))
        order = (c.get("des_order_range") or {}).get("n_per_request")
        order_txt = f"{order['min_s']:.1f}–{order['max_s']:.1f}" if order else "n/a"
        tokens = ", ".join(f"{c['mean_tokens'][m]} / {c['max_tokens'][m]}" for m in c["mean_tokens"])
        rows.append(
            f"| {c['prompts']} × {c['n']} | {c['servers']} | {c['time_scale']:g} | {num(c['baseline_makespan_s'])} | {num(c['rollflow_makespan_s'])} | "
            f"{num(c['measured_speedup'], '{:.2f}×')} | {num(c['des_speedup'], '{:.2f}×')} | {pct(c['speedup_vs_des'])} | {num(c['des_baseline_makespan_s'])} | "
            f"{num(c['des_rollflow_makespan_s'])} | {pct(c['overhead'])} | {pct(c['baseline_overhead'])} | {order_txt} | {num(same.get('speedup'), '{:.2f}×')} | {tokens} | {ramp_txt} |"
        )
    errors = [f"- {m}: {r['error']}" for c in rep["cells"] for m, r in c["runs"].items() if not r["ok"]]
    return rows + ([""] + errors if errors else [])


def mode_errors(rep: dict) -> list[str]:
    """Why each failed run of a per-mode report (W2, W3) failed, under its table."""
    errors = [f"- {mode}: {m['run']['error']}" for c in rep["cells"] for mode, m in c["modes"].items() if m.get("run") and not m["run"]["ok"]]
    return [""] + errors if errors else []


def w2_table(rep: dict) -> list[str]:
    rows = [
        "| batch | groups × size | time scale | step mean s | measured s | DES s | overhead | groups started (DES) | groups failed (DES) | speedup over exact, measured (DES) |",
        "|---:|---|---:|---:|---:|---:|---:|---|---|---|",
    ]
    for c in rep["cells"]:
        for mode, m in c["modes"].items():
            sp = f"{num(c['measured_speedup'], '{:.2f}×')} ({c['des_speedup']:.2f}×)" if mode == "redundant" else ""
            started = "n/a" if m["groups_started"] is None else m["groups_started"]
            failed = "n/a" if m["groups_failed"] is None else m["groups_failed"]
            rows.append(
                f"| {c['batch']} | {m['num_env_groups']} × {m['group_size']} ({mode}) | {c['time_scale']:g} | {c['env_step_mean_s']:g} | {num(m['makespan_s'])} | {m['des_makespan_s']:.1f} | "
                f"{pct(m['overhead'])} | {started} ({m['des_groups_started']}) | {failed} ({m['des_groups_failed']}) | {sp} |"
            )
    return rows + mode_errors(rep)


def w2_plot(reps: list[dict], png: Path, names: list[str]) -> None:
    """The DES heatmap of the first report's grid, with each measured speedup written in its cell."""
    cell0 = reps[0]["cells"][0]
    grid = cell0["des_grid"]
    groups = sorted({g["num_env_groups"] for g in grid})
    sizes = sorted({g["group_size"] for g in grid})
    z = [[next(g["speedup"] for g in grid if g["num_env_groups"] == n and g["group_size"] == k) for k in sizes] for n in groups]
    fig, ax = plt.subplots(figsize=(7, 5))
    im = ax.imshow(z, origin="lower", cmap="viridis")
    for i, n in enumerate(groups):
        for j, k in enumerate(sizes):
            ax.text(j, i, f"{z[i][j]:.2f}×", ha="center", va="center", color="w", fontsize=8)
    for rep in reps:
        for c in rep["cells"]:
            m = c["modes"].get("redundant")
            if m and c["measured_speedup"] is not None and m["num_env_groups"] in groups and m["group_size"] in sizes:
                i, j = groups.index(m["num_env_groups"]), sizes.index(m["group_size"])
                ax.text(j, i - 0.3, f"meas. {c['measured_speedup']:.2f}×", ha="center", va="center", color="orange", fontsize=7, fontweight="bold")
    ax.set_xticks(range(len(sizes)), [str(k) for k in sizes])
    ax.set_yticks(range(len(groups)), [str(n) for n in groups])
    ax.set(xlabel="group_size", ylabel="num_env_groups",
           title=f"W2: DES speedup over {cell0['baseline']} (batch {cell0['batch']}, timeout {cell0['timeout_s']:g} s)")
    fig.colorbar(im, ax=ax, label="speedup")
    fig.tight_layout()
    fig.savefig(png, dpi=110)


W3_MODES = {"batch": "batch (waves)", "queue": "queue + spares", "queue_no_additional": "queue, no spares"}


def w3_table(rep: dict) -> list[str]:
    rows = [
        "| P × k (+ spares) | servers | time scale | mode | measured s | DES s | overhead | prompts started (DES) | groups filtered (DES) | speedup over batch, measured (DES) | requests sent over (p50 / last) s |",
        "|---|---:|---:|---|---:|---:|---:|---|---|---|---|",
    ]
    for c in rep["cells"]:
        ramp = c.get("dispatch_ramp") or {}
        speedups = {"queue": (c["measured_speedup"], c["des_speedup"]), "queue_no_additional": (c["no_additional"]["measured_speedup"], c["no_additional"]["des_speedup"])}
        for mode, m in c["modes"].items():
            sp = speedups.get(mode)
            sp_txt = f"{num(sp[0], '{:.2f}×')} ({sp[1]:.2f}×)" if sp else ""
            r = ramp.get(mode)
            ramp_txt = f"{r['p50_s']:.1f} / {r['last_s']:.1f}" if r else "n/a"
            rows.append(
                f"| {c['prompts']} × {c['k']} (+{c['max_additional_running_prompts']}) | {c['servers']} | {c['time_scale']:g} | {W3_MODES[mode]} | {num(m['makespan_s'])} | {m['des_makespan_s']:.1f} | "
                f"{pct(m['overhead'])} | {m['prompts_started'] if m['prompts_started'] is not None else 'n/a'} ({m['des_prompts_started']}) | "
                f"{m['groups_filtered'] if m['groups_filtered'] is not None else 'n/a'} ({m['des_groups_filtered']}) | {sp_txt} | {ramp_txt} |"
            )
    return rows + mode_errors(rep)


def w3_plot(reps: list[dict], png: Path, names: list[str]) -> None:
    fig, ax = plt.subplots(figsize=(8, 4.5))
    cells = [c for rep in reps for c in rep["cells"]]
    modes = list(W3_MODES)
    w = 0.13
    for i, c in enumerate(cells):
        for k, mode in enumerate(modes):
            m = c["modes"].get(mode)
            if not m:
                continue
            x0 = i - 2.5 * w + 2 * k * w
            ax.bar(x0, m["makespan_s"] or 0, w, color=f"C{k}", label=f"{W3_MODES[mode]}, measured" if i == 0 else None)
            ax.bar(x0 + w, m["des_makespan_s"], w, color=f"C{k}", alpha=0.5, hatch="//", label=f"{W3_MODES[mode]}, DES" if i == 0 else None)
    ax.set_xticks(range(len(cells)), [f"{c['prompts']}×{c['k']} +{c['max_additional_running_prompts']}, K={c['servers']}\nscale {c['time_scale']:g}" for c in cells])
    ax.set(ylabel="rollout makespan s (until P groups pass)", title="W3: queue scheduling with dynamic filtering, measured vs DES")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def w4_plot(reps: list[dict], png: Path, names: list[str]) -> None:
    fig, ax = plt.subplots(figsize=(8, 4.5))
    cells = [(name, c) for rep, name in zip(reps, names) for c in rep["cells"]]
    x = range(len(cells))
    w = 0.2
    series = [("baseline_makespan_s", "n per request, measured", None), ("des_baseline_makespan_s", "n per request, DES", "//"),
              ("rollflow_makespan_s", "replicated, measured", None), ("des_rollflow_makespan_s", "replicated, DES", "//")]
    for k, (key, label, hatch) in enumerate(series):
        ax.bar([i - 1.5 * w + k * w for i in x], [c[key] or 0 for _, c in cells], w, label=label, hatch=hatch, alpha=0.5 if hatch else 1, color=f"C{k // 2}")
    # The DES over 100 other arrival orders of the same requests (reports that have it).
    for k, mode in ((1, "n_per_request"), (3, "replicated")):
        spans = [(i, (c.get("des_order_range") or {}).get(mode)) for i, (_, c) in enumerate(cells)]
        spans = [(i, r) for i, r in spans if r]
        if spans:
            ax.vlines([i - 1.5 * w + k * w for i, _ in spans], [r["min_s"] for _, r in spans], [r["max_s"] for _, r in spans], colors="k", lw=1.5,
                      label="DES, 100 other arrival orders" if k == 1 else None)
    ax.set_xticks(list(x), [f"{c['prompts']}×{c['n']}, K={c['servers']}\nscale {c['time_scale']:g}" for _, c in cells])
    ax.set(ylabel="rollout makespan s", title="W4: prompt replication, measured vs DES (on each run's own lengths)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def w1_plot(reps: list[dict], png: Path, names: list[str]) -> None:
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    cells = [dict(c, time_scale=rep["options"]["time_scale"]) for rep in reps for c in rep["cells"]]
    for key in sorted({(c["mean_s"], c["std_s"], c["time_scale"]) for c in cells}):
        mine = sorted((c for c in cells if (c["mean_s"], c["std_s"], c["time_scale"]) == key), key=lambda c: c["batch"])
        b = [c["batch"] for c in mine]
        label = f"(μ,σ) = ({key[0]:g},{key[1]:g}), scale {key[2]:g}"
        line = ax1.plot(b, [c["measured_speedup"] for c in mine], "o-", label=f"measured {label}")[0]
        ax1.plot(b, [c["des_speedup"] for c in mine], "x--", ms=9, color=line.get_color(), label=f"DES {label}")
        ax2.plot(b, [None if c["overhead"] is None else 100 * c["overhead"] for c in mine], "o-", color=line.get_color(), label=label)
    ax1.set(xscale="log", xlabel="batch B (trajectories)", ylabel="speedup = lockstep / env_async makespan", title="W1: speedup, measured vs DES")
    ax2.axhline(5, color="grey", lw=0.8, ls=":")
    ax2.set(xscale="log", yscale="symlog", xlabel="batch B (trajectories)", ylabel="overhead % (measured / DES − 1)", title="W1: env_async orchestration overhead (target ≤ 5 %)")
    ax2.set_ylim(bottom=min(0, *(100 * c["overhead"] for c in cells if c["overhead"] is not None)))
    for ax in (ax1, ax2):
        ax.set_xticks([64, 128, 256, 512], ["64", "128", "256", "512"])
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def w5_plot(reps: list[dict], png: Path, names: list[str]) -> None:
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    w = 0.8 / (2 * len(reps))
    for r, (rep, name) in enumerate(zip(reps, names)):
        cells = rep["cells"]
        a = [str(c["alpha"]) for c in cells]
        x = [i - 0.4 + (2 * r + 0.5) * w for i in range(len(cells))]
        bars = ax1.bar(x, [c["samples_per_s"] or 0 for c in cells], w, label=f"measured ({name})")
        ax1.bar([i + w for i in x], [(c["des"] or {}).get("samples_per_s", 0) for c in cells], w, color=bars.patches[0].get_facecolor(), alpha=0.45, hatch="//", label=f"DES, same lengths ({name})")
        ax1.plot([i + w / 2 for i in x], [(c["des"] or {}).get("bound_min_samples_per_s") for c in cells], "k_", ms=14, mew=2, label="Prop. 1–2 floor" if r == 0 else None)
        ax1.set_xticks(range(len(cells)), a)
        for key, style in (("trainer_idle_ratio", "o-"), ("rollout_idle_ratio", "s-")):
            line = ax2.plot(a, [c[key] for c in cells], style, label=f"{key.split('_')[0]} idle, measured ({name})")[0]
            ax2.plot(a, [(c["des"] or {}).get(key) for c in cells], style.replace("-", "--"), color=line.get_color(), alpha=0.5, label=f"{key.split('_')[0]} idle, DES ({name})")
    ax1.set(xlabel="async ratio α", ylabel="samples/s", title="W5: throughput")
    ax2.set(xlabel="async ratio α", ylabel="share of the makespan", title="W5: idle ratios")
    for ax in (ax1, ax2):
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def w7_plot(reps: list[dict], png: Path, names: list[str]) -> None:
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    sizes = set()
    for rep, name in zip(reps, names):
        cells = [c for c in rep["cells"] if not c.get("skipped") and c["makespan_s"] is not None]
        failed = [c["in_flight"] for c in rep["cells"] if c.get("skipped", "").startswith("failed") or (not c.get("skipped") and c["makespan_s"] is None)]
        n = [c["in_flight"] for c in cells]
        sizes.update(n + failed)
        o = rep["options"]
        label = f"{name}: μ={o['mean_s']:g} s, σ={o['std_s']:g} s, T={o['turns']}, scale {o['time_scale']:g}"
        line = ax1.plot(n, [100 * c["overhead"] for c in cells], "o-", label=label)[0]
        ax2.plot(n, [c["activities_per_s"] for c in cells], "o-", color=line.get_color(), label=label)
        for f in failed:
            for ax in (ax1, ax2):
                ax.axvline(f, color=line.get_color(), ls="--", lw=1)
                ax.annotate("failed", (f, 0.95), xycoords=("data", "axes fraction"), rotation=90, fontsize=8, ha="right", va="top", color=line.get_color())
    ax1.axhline(10, color="grey", lw=0.8, ls=":")
    ax1.set(xscale="log", yscale="log", xlabel="trajectories in flight", ylabel="overhead % (measured / DES − 1; target ≤ 10 %)", title="W7: overhead, embedded dev server")
    ax2.set(xscale="log", xlabel="trajectories in flight", ylabel="activities/s", title="W7: orchestration throughput")
    for ax in (ax1, ax2):
        ticks = sorted(sizes)
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def w8_table(rep: dict) -> list[str]:
    rows = [
        "| episodes | lockstep s | env_async s | measured speedup | DES speedup | DES lockstep s | DES env_async s | overhead env_async | "
        "env step median / p99 s | submit (grading) median / p99 s | generate median s | reward mean | left behind (workspaces, processes) | load before runs |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---|---|",
    ]
    for c in rep["cells"]:
        env, submit = c["env_step_s"]["all"], c["env_step_s"].get("submit", {})
        left = "; ".join(f"{m} {l['workspaces']}, {l['sandbox_processes']}" for m, l in c["left_behind"].items())
        loads = " / ".join(f"{r['load1_before']:.1f}" for r in c["runs"].values())
        rows.append(
            f"| {c['episodes']} | {num(c['baseline_makespan_s'])} | {num(c['rollflow_makespan_s'])} | {num(c['measured_speedup'], '{:.2f}×')} | "
            f"{c['des_speedup']:.2f}× | {c['des_baseline_makespan_s']:.1f} | {c['des_rollflow_makespan_s']:.1f} | {pct(c['overhead'])} | "
            f"{num(env['median_s'], '{:.2f}')} / {num(env['p99_s'], '{:.2f}')} | {num(submit.get('median_s'), '{:.2f}')} / {num(submit.get('p99_s'), '{:.2f}')} | "
            f"{num(c['generate_s']['median_s'], '{:.2f}')} | {num(c['reward_mean'].get('env_async'), '{:.2f}')} | {left} | {loads} |"
        )
        cost = c.get("sandbox_cost")
        if cost and "sandboxed_true" in cost:
            rows += ["", f"Sandbox cost ({cost['sandboxed_true']['n']} runs each): a sandboxed `true` median {cost['sandboxed_true']['median_ms']} ms "
                     f"(p99 {cost['sandboxed_true']['p99_ms']}) against a bare subprocess {cost['bare_subprocess_true']['median_ms']} ms: "
                     f"{cost['overhead_median_ms']} ms per command; a workspace opened and removed: median {cost['open_and_remove_workspace']['median_ms']} ms "
                     f"(p99 {cost['open_and_remove_workspace']['p99_ms']}); load average then {cost['loadavg_before'][0]:.1f}."]
    return rows


def w8_plot(reps: list[dict], png: Path, names: list[str]) -> None:
    cells = sorted((c for r in reps for c in r["cells"]), key=lambda c: c["episodes"])
    fig, ax = plt.subplots(figsize=(6, 4))
    xs = [c["episodes"] for c in cells]
    for key, label in [("baseline_makespan_s", "lockstep (measured)"), ("rollflow_makespan_s", "env_async (measured)"),
                       ("des_baseline_makespan_s", "lockstep (DES)"), ("des_rollflow_makespan_s", "env_async (DES)")]:
        ax.plot(xs, [c[key] for c in cells], marker="o", linestyle="--" if "des" in key else "-", label=label)
    ax.set_xlabel("SWE-lite episodes in the step")
    ax.set_ylabel("rollout makespan (s)")
    ax.set_title("W8: SWE-lite, lockstep vs env_async")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def w8_swe_table(rep: dict) -> list[str]:
    """W8 on the swe env: the two modes against the DES, throughput per core, sandbox start and grading, then the sweep."""
    rows = [
        "| env, dataset | episodes | actions | lockstep s | env_async s | measured speedup | DES speedup | overhead env_async | "
        "episodes/min/core lockstep / env_async | sandbox start (reset) p50 / p99 s | grading p50 / p99 s | reward mean | left behind | load before runs |",
        "|---|---:|---|---:|---:|---:|---:|---:|---|---|---|---:|---|---|",
    ]
    for c in rep["cells"]:
        t, start, grading = c.get("throughput", {}), c.get("sandbox_start_s", {}), c.get("grading_s", {})
        per_core = " / ".join(num((t.get(m) or {}).get("episodes_per_min_per_core"), "{:.2f}") for m in ("lockstep", "env_async"))
        left = "; ".join(f"{m} {l['workspaces']}, {l['sandbox_processes']}" for m, l in c["left_behind"].items())
        loads = " / ".join(f"{r['load1_before']:.1f}" for r in c["runs"].values())
        dataset = Path(c["instances"]).name if c.get("instances") else "tiers " + ",".join(map(str, c.get("tiers", [])))
        rows.append(
            f"| {c.get('env', 'swe_lite')}, {dataset} ({c.get('dataset_size', 60)}) | {c['episodes']} | {c['actions']} | {num(c['baseline_makespan_s'])} | "
            f"{num(c['rollflow_makespan_s'])} | {num(c['measured_speedup'], '{:.2f}×')} | {num(c['des_speedup'], '{:.2f}×')} | {pct(c['overhead'])} | {per_core} | "
            f"{num(start.get('median_s'), '{:.2f}')} / {num(start.get('p99_s'), '{:.2f}')} | {num(grading.get('median_s'), '{:.2f}')} / {num(grading.get('p99_s'), '{:.2f}')} | "
            f"{num(c['reward_mean'].get('env_async'), '{:.2f}')} | {left} | {loads} |"
        )
        cost = c.get("sandbox_cost")
        if cost and "sandboxed_true" in cost:
            rows += ["", f"Sandbox cost ({cost['sandboxed_true']['n']} runs each): a sandboxed `true` median {cost['sandboxed_true']['median_ms']} ms "
                     f"against a bare subprocess {cost['bare_subprocess_true']['median_ms']} ms; a workspace opened and removed: median "
                     f"{cost['open_and_remove_workspace']['median_ms']} ms; load average then {cost['loadavg_before'][0]:.1f}."]
        sweep = c.get("in_flight_sweep") or []
        if sweep:
            rows += ["", "Episodes in flight (env_async, one-episode groups; each episode holds one sandbox workspace):", "",
                     "| in flight | makespan s | episodes/min | episodes/min/core | reward mean | load before (1/5/15 min) | left behind |",
                     "|---:|---:|---:|---:|---:|---|---|"]
            for x in sweep:
                rows.append(f"| {x['in_flight']} | {num(x['makespan_s'])} | {num(x['episodes_per_min'])} | {num(x['episodes_per_min_per_core'], '{:.2f}')} | "
                            f"{num(x['reward_mean'], '{:.2f}')} | {' / '.join(f'{v:.1f}' for v in x['uptime_before'])} | "
                            f"{x['left_behind']['workspaces']}, {x['left_behind']['sandbox_processes']} |")
            at = c.get("throughput_stops_growing_at")
            rows += ["", f"Throughput stops growing at **{at} episodes in flight** (no larger size gains more than 10 %)." if at is not None
                     else "Throughput was still growing at the largest size tried."]
    return rows


def w8_swe_plot(reps: list[dict], png: Path, names: list[str]) -> None:
    fig, ax = plt.subplots(figsize=(6, 4))
    for rep, name in zip(reps, names):
        for c in rep["cells"]:
            sweep = [x for x in c.get("in_flight_sweep") or [] if x["episodes_per_min"] is not None]
            if sweep:
                ax.plot([x["in_flight"] for x in sweep], [x["episodes_per_min"] for x in sweep], marker="o", label=name)
    ax.set(xscale="log", xlabel="episodes (sandboxes) in flight", ylabel="episodes per minute", title="W8 on the swe env: throughput on 2 shared cores")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


TITLES = {
    "w1": "W1: env-level async rollout vs lockstep (ROLL Flash Fig. 9)",
    "w2": "W2: redundant env rollout (ROLL Flash Fig. 10)",
    "w3": "W3: queue scheduling with dynamic filtering (ROLL Flash Fig. 7)",
    "w4": "W4: prompt replication (ROLL Flash Fig. 8)",
    "w5": "W5: async vs sync training (ROLL Flash Prop. 1–2)",
    "w7": "W7: orchestration scale on the embedded dev server",
    "w8": "W8: SWE-lite episodes in the sandbox, lockstep vs env_async",
    "w8-swe": "W8 on the swe env: SWE-bench-format tasks, the gold-patch oracle, lockstep vs env_async",
}
TABLES = {"w1": w1_table, "w2": w2_table, "w3": w3_table, "w4": w4_table, "w5": w5_table, "w7": w7_table, "w8": w8_table, "w8-swe": w8_swe_table}
PLOTS = {"w1": w1_plot, "w2": w2_plot, "w3": w3_plot, "w4": w4_plot, "w5": w5_plot, "w7": w7_plot, "w8": w8_plot, "w8-swe": w8_swe_plot}


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in TABLES:
        print(__doc__, file=sys.stderr)
        return 2
    workload, files = argv[0], [Path(f) for f in argv[1:]]
    reps = [json.loads(f.read_text()) for f in files]
    out_dir = files[0].parent
    lines = [f"# {TITLES[workload]}", "", f"![{workload}]({workload}.png)", ""]
    for f, rep in zip(files, reps):
        lines += [f"## {f.name}", ""] + header(rep) + TABLES[workload](rep) + [""]
    notes = out_dir / f"{workload}.notes.md"
    if notes.exists():
        lines += [notes.read_text().rstrip(), ""]
    (out_dir / f"{workload}.md").write_text("\n".join(lines))
    PLOTS[workload](reps, out_dir / f"{workload}.png", [f.stem for f in files])
    print(f"wrote {out_dir / (workload + '.md')} and {out_dir / (workload + '.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
