// The embedded Temporal dev server killed with SIGKILL mid-run (a train step
// or groups in flight) and restarted on the same SQLite db by `rollflow dev up`:
// the run completes with every step trained once, in order, and every consumed
// uid unique. The engines and the worker keep running through the outage and
// reconnect on their own. Every check reads what the run recorded.
import { readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { batchDir } from '../../src/workflows/ids';
import { status as statusQuery } from '../../src/workflows/run';
import { freePort, readJsonl, readPid, ROOT, TestDevServer } from './helpers/dev-server';

const B = 8; // 2 groups of 4
const STEPS = 10;
let server: TestDevServer;
let config: string;

const rollflow = (...args: string[]) => server.rollflow(args, 600_000);

/** Polls `probe` (a recorded state, not a clock) until it yields a value; the deadline only guards against a hang. */
async function until<T>(probe: () => Promise<T | undefined>, timeoutMs = 300_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('condition never held');
    await sleep(100);
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

beforeAll(async () => {
  expect(readdirSync(path.join(ROOT, 'dist')).length, 'run `make build` first').toBeGreaterThan(0);
  server = await TestDevServer.create();
  const [inference, trainer, env] = [await freePort(), await freePort(), await freePort()];
  config = path.join(server.stateDir, 'run.yaml');
  writeFileSync(
    config,
    `
exp_name: temporal-kill
run_dir: ${server.stateDir}/run
max_steps: ${STEPS}
rollout_batch_size: 2
num_return_sequences_in_group: 4
async_generation_ratio: 1
dataset_size: 256
custom_envs:
  arith: { env_type: arithmetic, max_steps: 1, max_tokens_per_step: 64 }
train_env_manager: { num_env_groups: 2, group_size: 4, tags: [arith] }
temporal: { address: "${server.address}", ui_url: "http://127.0.0.1:${server.uiPort}", task_queue: temporal-kill }
engines:
  # a real decode and train cost, so a kill lands with groups generating and a step training
  inference: [{ url: "http://127.0.0.1:${inference}", backend: sim, options: { sim: { c0: 0.02, c1: 0.002, length: { dist: lognormal, mean: 32, sigma: 0.8 } } } }]
  trainer: { url: "http://127.0.0.1:${trainer}", backend: sim, options: { sim_seconds_per_sample: 0.05 } }
  env: { url: "http://127.0.0.1:${env}" }
`,
  );
  const up = rollflow('dev', 'up', config);
  expect(up.status, up.stderr).toBe(0);
});

afterAll(() => {
  if (server) rollflow('dev', 'down', config);
});

it('survives kill -9 of the Temporal dev server mid-run: restarted on the same db, the run trains every step once', async () => {
  const started = rollflow('run', config, '--run-id', 'server-killed');
  expect(started.status, started.stderr).toBe(0);
  const db = path.join(server.stateDir, 'temporal', 'temporal.db');
  const dbInode = statSync(db).ino;

  let client = new Client({ connection: await Connection.connect({ address: server.address }) });
  // Mid-run: steps done but not all, groups generating.
  const atKill = await until(async () => {
    const s = await client.workflow.getHandle('server-killed').query(statusQuery);
    return s.step >= 2 && s.step < STEPS - 2 && s.running > 0 ? s : undefined;
  });
  await client.connection.close();
  const serverPid = readPid(path.join(server.stateDir, 'temporal', 'server.pid'));
  process.kill(serverPid, 'SIGKILL');
  await until(async () => (alive(serverPid) ? undefined : true), 30_000);

  const up = rollflow('dev', 'up', config); // what an operator runs: starts what is not running
  expect(up.status, up.stderr).toBe(0);
  expect(up.stderr).toContain(`removing stale pid file`);
  expect(up.stdout).toMatch(/engine-inference-\d+: already running/);
  expect(up.stdout).toContain('worker-temporal-kill: already running');
  expect(readPid(path.join(server.stateDir, 'temporal', 'server.pid'))).not.toBe(serverPid);
  expect(statSync(db).ino).toBe(dbInode);

  client = new Client({ connection: await Connection.connect({ address: server.address }) });
  try {
    const final = await client.workflow.getHandle('server-killed').result();
    expect([final.step, final.version]).toEqual([STEPS, STEPS]);
    expect(final.totals.trainedSamples).toBe(STEPS * B);
  } finally {
    await client.connection.close();
  }
  // The kill did land mid-run: steps remained and groups were out.
  expect(atKill.step).toBeLessThan(STEPS);
  expect(atKill.running).toBeGreaterThan(0);

  // One metrics record per step, in order, each trained version = step + 1.
  const metrics = readJsonl<{ run_id: string; step: number; version: number }>(path.join(server.stateDir, 'run', 'metrics.jsonl')).filter((m) => m.run_id === 'server-killed');
  expect(metrics.map((m) => [m.step, m.version])).toEqual(Array.from({ length: STEPS }, (_, i) => [i, i + 1]));
  // One batch file per step, every consumed uid unique.
  const dir = path.join(server.stateDir, 'run', 'samples', batchDir('server-killed'));
  const files = readdirSync(dir).sort();
  expect(files).toHaveLength(STEPS);
  const uids = files.flatMap((f) => readJsonl<{ uid: string }>(path.join(dir, f)).map((x) => x.uid));
  expect(uids).toHaveLength(STEPS * B);
  expect(new Set(uids).size).toBe(STEPS * B);
});
