// A SWE-lite env server killed mid-episode inside a run (issue #13's durable env state), on a real dev server
// with the scripted sim policy: the run is suspended while episodes are open between turns (their workspaces
// changed by commands, so each has a snapshot), the env server is killed with SIGKILL, the run resumes (its env
// steps retry against the dead server) and an operator brings a new server up with `rollflow dev up` on the same
// snapshot_dir. The new server has none of the sessions: the bridge resets each lost episode from its latest
// snapshot (restore) and sends only the actions taken after it. Checked on what the servers and the run recorded:
// the new server's restore count, every episode graded and closed, each step trained once.
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { batchDir, runDataDir } from '../../src/core';
import { status as statusQuery } from '../../src/workflows/run';
import { freePort, readJsonl, ROOT, TestDevServer, until } from './helpers/dev-server';
import { scrape } from './helpers/prometheus';

const B = 8;
const STEPS = 2;
let server: TestDevServer;
let config: string;
let client: Client;
let envUrl: string;
let envPort: number;
let snapshotDir: string;

const rollflow = (...args: string[]) => server.rollflow(args, 600_000);

const metric = (m: Map<string, number>, name: string) => m.get(`rollflow_env_${name}{env="swe_lite"}`) ?? 0;

beforeAll(async () => {
  expect(readdirSync(path.join(ROOT, 'dist')).length, 'run `make build` first').toBeGreaterThan(0);
  server = await TestDevServer.create();
  const [inference, trainer] = [await freePort(), await freePort()];
  envPort = await freePort();
  envUrl = `http://127.0.0.1:${envPort}`;
  snapshotDir = path.join(server.stateDir, 'env-snapshots');
  ({ config, client } = await server.upStack(
    `
exp_name: swe-lite-env-loss-test
run_dir: ${server.stateDir}/run
seed: 5
async_generation_ratio: 1
stale_policy: drop
dataset_size: 40
custom_envs:
  swe:
    env_type: swe_lite
    max_steps: 10
    max_tokens_per_step: 512
    env_calls: activity
    env_config: { max_turns: 10, tiers: [1] }
train_env_manager: { num_env_groups: 2, group_size: 4, tags: [swe] }
actor_infer: { generating_args: { max_new_tokens: 512 } }
temporal: { address: "${server.address}", ui_url: "http://127.0.0.1:${server.uiPort}", task_queue: swe-lite-env-loss-test }
engines:
  # Solvers view, run two commands (each saves a snapshot), fix and submit; flailers run commands for 6 turns.
  # A real per-call cost, so episodes spend their time between env steps.
  inference: [{ url: "http://127.0.0.1:${inference}", backend: sim, options: { sim: { c0: 0.2, policy: { kind: swe_oracle, solve_prob: 0.5, solve_after_turns: 3, flail_turns: 6, invalid_prob: 0 } } } }]
  trainer: { url: "http://127.0.0.1:${trainer}", backend: sim, options: { sim_seconds_per_sample: 0.02 } }
  env: { url: "${envUrl}", options: { snapshot_dir: "${snapshotDir}" } }
`,
    { supervise: false },
  ));
});

afterAll(() => server?.downStack(config, client));

it('a killed env server: the lost episodes resume from their snapshots on the new server; every episode graded, each step trained once', async () => {
  const runId = 'swe-env-loss';
  const started = rollflow('run', config, '--run-id', runId, '--set', `max_steps=${STEPS}`);
  expect(started.status, started.stderr).toBe(0);
  const handle = client.workflow.getHandle(runId);
  await until(async () => ((await handle.query(statusQuery)).step >= 1 ? true : undefined), 'step 1 trained');
  expect(rollflow('suspend', runId, '--config', config).status).toBe(0);
  // Held with episodes open between turns, at least one of them past a command (its snapshot saved).
  await until(async () => {
    const st = await handle.query(statusQuery);
    const saved = existsSync(snapshotDir) ? readdirSync(snapshotDir).filter((f) => !f.startsWith('.')).length : 0;
    return st.suspended && st.enginesPaused && metric(await scrape(envUrl), 'sessions_open') > 0 && saved > 0 ? true : undefined;
  }, 'suspended with episodes open and snapshots saved');
  expect((await handle.query(statusQuery)).step).toBeLessThan(STEPS);

  await server.killEngine('env', envUrl);
  expect(rollflow('resume', runId, '--config', config).status).toBe(0);
  const up = rollflow('dev', 'up', config, '--no-supervise'); // as an operator would: the stack runs without its supervisor
  expect(up.status, up.stderr).toBe(0);
  expect(up.stdout).toContain(`engine-env-${envPort}: started`);

  const final = await handle.result();
  expect(final.step).toBe(STEPS);
  const st = await handle.query(statusQuery);
  expect(st.totals).toMatchObject({ failedGroups: 0, infraFailedGroups: 0, envRestarts: 0 });
  expect(st.totals.envReplays).toBeGreaterThan(0);

  // The new server resumed lost episodes from snapshots, and graded and closed every episode it held.
  const m = await scrape(envUrl);
  expect(metric(m, 'restores_total')).toBeGreaterThan(0);
  expect(metric(m, 'restores_total')).toBeLessThanOrEqual(st.totals.envReplays);
  expect(metric(m, 'sessions_open')).toBe(0);

  const trained = readdirSync(path.join(server.stateDir, 'run', 'samples', batchDir(runId))).flatMap((f) =>
    readJsonl<{ uid: string }>(path.join(server.stateDir, 'run', 'samples', batchDir(runId), f)).map((s) => s.uid),
  );
  expect(trained).toHaveLength(STEPS * B);
  expect(new Set(trained).size).toBe(STEPS * B);
  const records = readJsonl<{ run_id: string; step: number }>(path.join(runDataDir(path.join(server.stateDir, 'run'), runId), 'metrics.jsonl'));
  expect(records.filter((r) => r.run_id === runId).map((r) => r.step)).toEqual([...Array(STEPS).keys()]);
});
