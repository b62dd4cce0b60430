// The env-loss scenario of an env that snapshots its episodes (swe_lite, swe), shared by their run tests: a run is
// suspended while episodes are open between turns with snapshots saved, the env server is killed with SIGKILL, the
// run resumes (its env steps retry against the dead server) and an operator brings a new server up with
// `rollflow dev up` on the same snapshot_dir. The new server has none of the sessions: the bridge resets each lost
// episode from its latest snapshot (restore) and sends only the actions taken after it. Checked on what the servers
// and the run recorded: the new server's restore count, every episode graded and closed, each sample trained once.
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { expect } from 'vitest';
import { batchDir, runDataDir } from '../../../src/core';
import { status as statusQuery } from '../../../src/workflows/run';
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
  snapshotDir: string;
  runId: string;
  /** Samples a step trains on, and steps of the run. */
  batch: number;
  steps: number;
}

export async function loseSnapshotEnvMidEpisode(o: SnapshotEnvLoss): Promise<void> {
  const rollflow = (...args: string[]) => o.server.rollflow(args, 600_000);
  const metric = (m: Map<string, number>, name: string) => m.get(`rollflow_env_${name}{env="${o.env}"}`) ?? 0;
  const started = rollflow('run', o.config, '--run-id', o.runId, '--set', `max_steps=${o.steps}`);
  expect(started.status, started.stderr).toBe(0);
  const handle = o.client.workflow.getHandle(o.runId);
  await until(async () => ((await handle.query(statusQuery)).step >= 1 ? true : undefined), 'step 1 trained');
  expect(rollflow('suspend', o.runId, '--config', o.config).status).toBe(0);
  // Held with episodes open between turns, at least one of them past a command (its snapshot saved).
  await until(async () => {
    const st = await handle.query(statusQuery);
    const saved = existsSync(o.snapshotDir) ? readdirSync(o.snapshotDir).filter((f) => !f.startsWith('.')).length : 0;
    return st.suspended && st.enginesPaused && metric(await scrape(o.envUrl), 'sessions_open') > 0 && saved > 0 ? true : undefined;
  }, 'suspended with episodes open and snapshots saved');
  expect((await handle.query(statusQuery)).step).toBeLessThan(o.steps);

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
