// `rollflow bench w1` end to end on tiny sizes: it brings up its own embedded
// stack (dev server + sim engines + worker) in a throw-away state dir on free
// ports, runs the lockstep baseline and env_async, prints one cell with every
// field, and takes the stack down. No timing assertion: only that the fields
// are there and agree with each other.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePort, ROOT } from './helpers/dev-server';

const portFree = (port: number) =>
  new Promise<boolean>((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });

/** A base port with the four after it free too (Temporal, UI, inference, trainer, env). */
async function freePortBase(): Promise<number> {
  for (;;) {
    const base = await freePort();
    if (base > 65000) continue;
    const rest = await Promise.all([1, 2, 3, 4].map((i) => portFree(base + i)));
    if (rest.every(Boolean)) return base;
  }
}

describe('rollflow bench w1', () => {
  it('measures lockstep and env_async beside the DES and reports consistent figures', async () => {
    expect(readdirSync(path.join(ROOT, 'dist')).length, 'run `make build` first').toBeGreaterThan(0);
    const state = mkdtempSync(path.join(tmpdir(), 'rollflow-bench-'));
    const out = path.join(state, 'w1.json');
    const sets = ['batches=[4]', 'turns=3', 'latencies=[[0.2,0.1]]', 'llm_s=0.02', 'time_scale=1', `port_base=${await freePortBase()}`, 'run_timeout_s=240'];
    const r = spawnSync(path.join(ROOT, 'bin/rollflow'), ['bench', 'w1', ...sets.flatMap((s) => ['--set', s]), '--state-dir', state, '--out', out], { encoding: 'utf8', timeout: 300_000 });
    expect(r.status, r.stderr).toBe(0);

    const cell = JSON.parse(r.stdout.trim().split('\n').pop()!) as Record<string, number>;
    expect(cell).toMatchObject({ workload: 'w1', batch: 4, turns: 3, time_scale: 1, mean_s: 0.2, std_s: 0.1 });
    for (const k of ['baseline_makespan_s', 'rollflow_makespan_s', 'measured_speedup', 'des_speedup', 'des_baseline_makespan_s', 'des_rollflow_makespan_s']) {
      expect(cell[k], k).toBeGreaterThan(0);
    }
    expect(cell.measured_speedup).toBeCloseTo(cell.baseline_makespan_s! / cell.rollflow_makespan_s!, 3);
    expect(cell.des_speedup).toBeCloseTo(cell.des_baseline_makespan_s! / cell.des_rollflow_makespan_s!, 3);
    expect(cell.overhead).toBeCloseTo(cell.rollflow_makespan_s! / cell.des_rollflow_makespan_s! - 1, 3);
    expect(cell.baseline_overhead).toBeCloseTo(cell.baseline_makespan_s! / cell.des_baseline_makespan_s! - 1, 3);
    // both runs finished every group; the human summary went to stderr
    const runs = (cell as unknown as { runs: Record<string, { ok: boolean; failed_groups: number }> }).runs;
    expect(Object.values(runs).map((x) => [x.ok, x.failed_groups])).toEqual([[true, 0], [true, 0]]);
    expect(r.stderr).toMatch(/rollflow bench: w1 B=4 .*overhead/);

    const report = JSON.parse(readFileSync(out, 'utf8')) as { command: string; machine: { nproc: number; mem_gib: number }; cells: unknown[]; date: string };
    expect(report.command).toMatch(/^rollflow bench w1 --set 'batches=\[4\]'/);
    expect(report.machine.nproc).toBeGreaterThan(0);
    expect(report.cells).toEqual([cell]);
    // the bench took its own stack down
    expect(existsSync(path.join(state, 'temporal', 'server.pid'))).toBe(false);
    expect(readdirSync(path.join(state, 'pids'))).toEqual([]);
  });
});

describe('rollflow bench w8', () => {
  it('runs SWE-lite episodes in both modes, feeds the DES with what the env_async run met, and finds nothing left behind', async () => {
    const state = mkdtempSync(path.join(tmpdir(), 'rollflow-bench-'));
    const sets = ['groups=2', 'group_size=2', 'tiers=[1]', 'max_turns=6', 'flail_turns=4', 'solve_after_turns=1', 'sandbox_runs=3', `port_base=${await freePortBase()}`, 'run_timeout_s=240'];
    const r = spawnSync(path.join(ROOT, 'bin/rollflow'), ['bench', 'w8', ...sets.flatMap((s) => ['--set', s]), '--state-dir', state], { encoding: 'utf8', timeout: 300_000 });
    expect(r.status, r.stderr).toBe(0);
    const cell = JSON.parse(r.stdout.trim().split('\n').pop()!) as Record<string, unknown> & Record<string, number>;
    expect(cell).toMatchObject({ workload: 'w8', episodes: 4, des_fed_by: "the env_async run's 4 trajectories" });
    expect(cell.measured_speedup).toBeCloseTo(cell.baseline_makespan_s! / cell.rollflow_makespan_s!, 3);
    expect(cell.overhead).toBeCloseTo(cell.rollflow_makespan_s! / cell.des_rollflow_makespan_s! - 1, 3);
    // every turn of the env_async run's 4 trajectories was read back: one generation and one env step each
    const steps = cell.env_step_s as unknown as Record<string, { n: number }>;
    expect((cell.turns as unknown as { n: number }).n).toBe(4);
    expect(steps.all!.n).toBe((cell.generate_s as unknown as { n: number }).n);
    expect(steps.all!.n).toBeGreaterThan(4);
    expect(steps.submit!.n).toBeGreaterThan(0);
    expect(cell.left_behind).toEqual({ lockstep: { workspaces: 0, sandbox_processes: 0 }, env_async: { workspaces: 0, sandbox_processes: 0 } });
    expect((cell.sandbox_cost as unknown as { sandboxed_true: { n: number } }).sandboxed_true.n).toBe(3);
    expect(r.stderr).toMatch(/rollflow bench: w8 4 swe_lite episodes: .*left behind: lockstep 0 workspaces, 0 processes; env_async 0 workspaces, 0 processes/);
  });
});
