// The embedded Temporal dev server killed with SIGKILL mid-run (a train step
// or groups in flight) and restarted on the same SQLite db by `rollflow dev up`:
// the run completes with every step trained once, in order, and every consumed
// uid unique. The engines and the worker keep running through the outage and
// reconnect on their own. Every check reads what the run recorded.
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { isAlive } from '../../src/stack/processes';
import { batchDir, runDataDir } from '../../src/core';
import { status as statusQuery } from '../../src/workflows/run';
import { readJsonl, readPid, ROOT, TestDevServer, until } from './helpers/dev-server';
import { writeSimRunConfig } from './helpers/sim-run-config';

const B = 8; // 2 groups of 4
const STEPS = 10;
let server: TestDevServer;
let config: string;

const rollflow = (...args: string[]) => server.rollflow(args, 600_000);

beforeAll(async () => {
  expect(readdirSync(path.join(ROOT, 'dist')).length, 'run `make build` first').toBeGreaterThan(0);
  server = await TestDevServer.create();
  config = await writeSimRunConfig(server, 'temporal-kill', STEPS);
  const up = rollflow('dev', 'up', config, '--no-supervise');
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
  await until(async () => (isAlive(serverPid) ? undefined : true), 'the killed server gone', 30_000);

  const up = rollflow('dev', 'up', config, '--no-supervise'); // what an operator runs: starts what is not running
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
  const metrics = readJsonl<{ run_id: string; step: number; version: number }>(path.join(runDataDir(path.join(server.stateDir, 'run'), 'server-killed'), 'metrics.jsonl')).filter((m) => m.run_id === 'server-killed');
  expect(metrics.map((m) => [m.step, m.version])).toEqual(Array.from({ length: STEPS }, (_, i) => [i, i + 1]));
  // One batch file per step, every consumed uid unique.
  const dir = path.join(server.stateDir, 'run', 'samples', batchDir('server-killed'));
  const files = readdirSync(dir).sort();
  expect(files).toHaveLength(STEPS);
  const uids = files.flatMap((f) => readJsonl<{ uid: string }>(path.join(dir, f)).map((x) => x.uid));
  expect(uids).toHaveLength(STEPS * B);
  expect(new Set(uids).size).toBe(STEPS * B);
});
