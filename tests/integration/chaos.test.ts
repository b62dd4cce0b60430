// The chaos harness (src/chaos) on the embedded stack with sim engines: one
// run during which a process of each of the five kinds (worker, Temporal
// server, inference server, trainer, env server) gets SIGKILL mid-run, in a
// seeded rotation, each restarted by the `rollflow dev up` logic as an operator
// would. The run's own records (metrics.jsonl, batch files, group workflows'
// results and histories) must keep every invariant. Longer schedules are in
// `make bench` (bench/results/chaos.md).
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chaos, FAULT_KINDS } from '../../src/chaos';
import { loadConfig, type LoadedConfig } from '../../src/configs';
import { down } from '../../src/stack';
import { ROOT, TestDevServer } from './helpers/dev-server';
import { writeSimRunConfig } from './helpers/sim-run-config';

const STEPS = 24;
let server: TestDevServer;
let file: string;
let loaded: LoadedConfig;
const log: string[] = [];

beforeAll(async () => {
  expect(readdirSync(path.join(ROOT, 'dist')).length, 'run `make build` first').toBeGreaterThan(0);
  server = await TestDevServer.create();
  process.env.ROLLFLOW_STATE = server.stateDir; // the stack's pid files, logs and Temporal db (this test file's process only)
  file = await writeSimRunConfig(server, 'chaos-test', STEPS);
  loaded = loadConfig(file);
});

afterAll(async () => {
  if (loaded) await down(loaded, (l) => log.push(l));
});

describe('chaos: every kind of process killed with SIGKILL mid-run, restarted as an operator would', () => {
  it('the run completes with every invariant kept after a kill of each kind', { timeout: 1_200_000 }, async () => {
    // A kill every 4 s ±25 % from the end of the first step, one of each kind in a seeded rotation.
    const result = await chaos(loaded, [file], { schedule: { kinds: [...FAULT_KINDS], everyS: 4, seed: 1, order: 'rotate' }, maxKills: FAULT_KINDS.length, runIdPrefix: 'all-kinds', timeoutS: 900, faultFree: false, say: (l) => log.push(l) });
    const run = result.underFaults;
    expect(run.checks.filter((c) => !c.ok), log.join('\n')).toEqual([]);
    expect(run.checks.length).toBeGreaterThan(10);
    expect(run.kills.map((k) => [k.skipped, k.restartError])).toEqual(FAULT_KINDS.map(() => [undefined, undefined])); // each killed, each restarted
    expect(new Set(run.kills.map((k) => k.kind))).toEqual(new Set(FAULT_KINDS));
    // Every kill landed mid-run: steps done before the first, steps after the last.
    expect(run.records.metrics.filter((m) => m.wall_s < run.kills[0]!.atS).length).toBeGreaterThan(0);
    expect(run.records.metrics.filter((m) => m.wall_s > run.kills.at(-1)!.atS).length, log.join('\n')).toBeGreaterThan(0);
    expect(run.accounting.consumed).toBe(STEPS * 2);
  });
});
