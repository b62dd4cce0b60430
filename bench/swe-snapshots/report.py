"""Markdown tables from bench_swe_snapshots.py's JSON: per suite and store, per action (every step; those that save no
snapshot at 0), first snapshot against later ones.

    .venv/bin/python bench/swe-snapshots/report.py bench/results/swe-snapshots.json
"""
from __future__ import annotations

import json
import sys


def ms(seconds: float | None) -> str:
    return "–" if seconds is None else f"{seconds * 1e3:.1f}"


def pct(ratio: float | None) -> str:
    return "–" if ratio is None else f"{ratio * 100:.2f} %"


def table(rows: list[tuple[str, dict]]) -> list[str]:
    out = ["| steps | n | wrote a manifest | step ms (median) | snapshot ms (median / max) | snapshot / step: sum, median, max | bytes written (median / max) | files hashed (median) |",
           "|---|---|---|---|---|---|---|---|"]
    for label, a in rows:
        if not a:
            continue
        out.append(f"| {label} | {a['n']} | {a.get('wrote', '–')} | {ms(a['step_s_median'])} | {ms(a['snapshot_s_median'])} / {ms(a['snapshot_s_max'])} | "
                   f"{pct(a['ratio_of_sums'])}, {pct(a['ratio_median'])}, {pct(a['ratio_max'])} | "
                   f"{a['bytes_written_median']:.0f} / {a['bytes_written_max']:.0f} | {a['hashed_files_median']:g} |")
    return out


def main() -> None:
    results = json.loads(open(sys.argv[1]).read())
    lines = [f"Machine: {results['cpus']} CPUs; `uptime` before: `{results['uptime_before']}`; after: `{results['uptime_after']}`."]
    if "create_ms_before" in results:
        lines.append(f"Creating a small file in the snapshot directory's disk (median of 200): {results['create_ms_before']:.3f} ms "
                     f"before, {results['create_ms_after']:.3f} ms after.")
    lines.append("")
    for name, suite in results["suites"].items():
        s = suite["summary"]
        errors = [e for e in suite["episodes"] if "error" in e]
        lines += [f"### {name}", "",
                  f"{len(suite['episodes']) - len(errors)} episodes ({len(errors)} could not be played); repository: median "
                  f"{s.get('base_entries_median', 0):.0f} entries, {s.get('base_mb_median', 0):.1f} MB. Snapshot time over the time of "
                  f"every step of the episodes: **{pct(s.get('episode_ratio'))}**. Reset (repository put together, reset state "
                  f"recorded) median {ms(s.get('reset_s_median'))} ms; restore (blobs read, manifest applied) median "
                  f"{ms(s.get('restore_s_median'))} ms. Lost right after the edit: restore median "
                  f"{ms(s.get('restore_after_edit_s_median'))} ms, with the edit sent again {ms(s.get('restore_and_edit_again_s_median'))} ms; "
                  f"the workspace and counters then those the edit left: {s.get('same_workspace_after_edit_again', '–')}.", ""]
        lines += table([("every saving step", s.get("saving_steps")), ("first snapshot", s.get("first_snapshot")),
                        ("later snapshots", s.get("later_snapshots")), *[(f"`{k}`", v) for k, v in s.get("by_action", {}).items()]])
        for e in errors:
            lines.append(f"\n- {e['instance_id']}: {e['error']}")
        lines.append("")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
