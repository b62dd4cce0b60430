// The env-loss scenario of an env that snapshots its episodes (swe_lite, swe), shared by their run tests: a run is
// held (suspended) while an episode is open between turns with a snapshot saved, the env server is killed with
// SIGKILL, the run resumes (its env steps retry against the dead server) and an operator brings a new server up with
// `rollflow dev up` on the same snapshot_dir. The new server has none of the sessions: the bridge resets each lost
// episode from its latest snapshot (restore) and sends only the actions taken after it. Checked on what the servers
// and the run recorded: the new server's restore count, every episode graded and closed, each sample trained once.
import { readdirSync } from 'node:fs';
import path from 'node:path';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { expect } from 'vitest';
import { batchDir, runDataDir } from '../../../src/core';
import { status as statusQuery, suspend } from '../../../src/workflows/run';
import { readJsonl, type TestDevServer, until } from './dev-server';
import { scrape } from './prometheus';

export interface SnapshotEnvLoss {
  server: TestDevServer;
  config: string;
  client: Client;
  /** The env type, as the env server labels its metrics. */
  env: string;
  envUrl: string;
  envPort: number;
  runId: string;
  /** Samples a step trains on, and steps of the run. */
  batch: number;
  steps: number;
}

/** How many holds may find no episode to lose before the test gives up (each try is a suspend and a resume). */
const HOLDS_AT_MOST = 12;

export async function loseSnapshotEnvMidEpisode(o: SnapshotEnvLoss): Promise<void> {
  const rollflow = (...args: string[]) => o.server.rollflow(args, 600_000);
  const metric = (m: Map<string, number>, name: string) => m.get(`rollflow_env_${name}{env="${o.env}"}`) ?? 0;
  const started = rollflow('run', o.config, '--run-id', o.runId, '--set', `max_steps=${o.steps}`);
  expect(started.status, started.stderr).toBe(0);
  const handle = o.client.workflow.getHandle(o.runId);
  await until(async () => ((await handle.query(statusQuery)).step >= 1 ? true : undefined), 'step 1 trained');
  await holdWithAResumableEpisode(o, handle, rollflow, metric);

  await o.server.killEngine('env', o.envUrl);
  expect(rollflow('resume', o.runId, '--config', o.config).status).toBe(0);
  const up = rollflow('dev', 'up', o.config, '--no-supervise'); // as an operator would: the stack runs without its supervisor
  expect(up.status, up.stderr).toBe(0);
  expect(up.stdout).toContain(`engine-env-${o.envPort}: started`);

  const final = await handle.result();
  expect(final.step).toBe(o.steps);
  const st = await handle.query(statusQuery);
  expect(st.totals).toMatchObject({ failedGroups: 0, infraFailedGroups: 0, envRestarts: 0 });
  expect(st.totals.envReplays).toBeGreaterThan(0);

  // The new server resumed lost episodes from snapshots, and graded and closed every episode it held.
  const m = await scrape(o.envUrl);
  expect(metric(m, 'restores_total')).toBeGreaterThan(0);
  expect(metric(m, 'restores_total')).toBeLessThanOrEqual(st.totals.envReplays);
  expect(metric(m, 'sessions_open')).toBe(0);

  const samples = path.join(o.server.stateDir, 'run', 'samples', batchDir(o.runId));
  const trained = readdirSync(samples).flatMap((f) => readJsonl<{ uid: string }>(path.join(samples, f)).map((s) => s.uid));
  expect(trained).toHaveLength(o.steps * o.batch);
  expect(new Set(trained).size).toBe(o.steps * o.batch);
  const records = readJsonl<{ run_id: string; step: number }>(path.join(runDataDir(path.join(o.server.stateDir, 'run'), o.runId), 'metrics.jsonl'));
  expect(records.filter((r) => r.run_id === o.runId).map((r) => r.step)).toEqual([...Array(o.steps).keys()]);
}

/**
 * Suspends the run until a hold finds an open episode with a saved snapshot (the env server's sessions_resumable
 * gauge), so the kill that follows always loses one a new server must resume. Each try is decided on what the
 * server reports once the suspension holds, never on how fast this machine runs: a hold that finds none (every
 * episode ended, or none has run a command yet) resumes, waits for the env's next step, and tries again.
 */
async function holdWithAResumableEpisode(o: SnapshotEnvLoss, handle: WorkflowHandle, rollflow: (...args: string[]) => { status: number | null; stderr: string }, metric: (m: Map<string, number>, name: string) => number): Promise<void> {
  for (let hold = 1; ; hold++) {
    // Signalled from here, not by the CLI: the run could end in the second the command takes to start, and a suspend
    // sent to an ended run is refused (as two run tests found once turns got cheaper).
    await handle.signal(suspend);
    await until(async () => {
      const st = await handle.query(statusQuery);
      return st.suspended && st.enginesPaused ? true : undefined;
    }, 'the suspension to hold');
    const m = await scrape(o.envUrl);
    if (metric(m, 'sessions_resumable') > 0) break;
    expect(hold, `${hold} holds found no open episode with a snapshot`).toBeLessThan(HOLDS_AT_MOST);
    expect((await handle.query(statusQuery)).step, 'the run reached its last step before a hold found an episode to lose').toBeLessThan(o.steps);
    const steps = metric(m, 'steps_total');
    const resumed = rollflow('resume', o.runId, '--config', o.config);
    expect(resumed.status, resumed.stderr).toBe(0);
    await until(async () => (metric(await scrape(o.envUrl), 'steps_total') > steps ? true : undefined), 'the env to take a step after the resume');
  }
  expect((await handle.query(statusQuery)).step).toBeLessThan(o.steps);
}
