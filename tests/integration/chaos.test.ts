// The chaos harness (src/chaos) on the embedded stack with sim engines: for
// each fault kind, one run during which a process of that kind gets SIGKILL
// mid-run and is restarted by the `rollflow dev up` logic; the run's own
// records (metrics.jsonl, batch files, group workflows' results and histories)
// must keep every invariant. RECOVERABLE lists the kinds asserted here; the
// others (made recoverable elsewhere) are skipped until added. How they fared
// when last run with this test: inference completed but trained tokens of
// version 0 (the restarted server's launch weights) at staleness 4 > 1;
// trainer failed the run (the restarted trainer, at version 0, answered the
// next exportWeights with 409); env kept every invariant.
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chaos, FAULT_KINDS, type FaultKind } from '../../src/chaos';
import { loadConfig, type LoadedConfig } from '../../src/configs';
import { down } from '../../src/stack';
import { ROOT, TestDevServer } from './helpers/dev-server';
import { writeSimRunConfig } from './helpers/sim-run-config';

const RECOVERABLE: FaultKind[] = ['worker', 'temporal'];

let server: TestDevServer;
let file: string;
let loaded: LoadedConfig;
const log: string[] = [];

beforeAll(async () => {
  expect(readdirSync(path.join(ROOT, 'dist')).length, 'run `make build` first').toBeGreaterThan(0);
  server = await TestDevServer.create();
  process.env.ROLLFLOW_STATE = server.stateDir; // the stack's pid files, logs and Temporal db (this test file's process only)
  file = await writeSimRunConfig(server, 'chaos-test', 10);
  loaded = loadConfig(file);
});

afterAll(async () => {
  if (loaded) await down(loaded, (l) => log.push(l));
});

describe('chaos: one process killed with SIGKILL mid-run, restarted as an operator would', () => {
  for (const kind of FAULT_KINDS) {
    (RECOVERABLE.includes(kind) ? it : it.skip)(`${kind}: the run completes with every invariant kept`, { timeout: 900_000 }, async () => {
      // One kill 3-5 s after the first step (every 4 s ±25 %): a fault-free run of this config takes ~20-40 s here.
      const result = await chaos(loaded, [file], { schedule: { kinds: [kind], everyS: 4, seed: 1, order: 'rotate' }, maxKills: 1, runIdPrefix: kind, timeoutS: 600, faultFree: false, say: (l) => log.push(l) });
      const run = result.underFaults;
      expect(run.checks.filter((c) => !c.ok)).toEqual([]);
      expect(run.checks.length).toBeGreaterThan(10);
      expect(run.kills).toHaveLength(1);
      const kill = run.kills[0]!;
      expect([kill.kind, kill.skipped, kill.restartError]).toEqual([kind, undefined, undefined]);
      // It landed mid-run: steps done before it, steps after it.
      expect(run.records.metrics.filter((m) => m.wall_s < kill.atS).length).toBeGreaterThan(0);
      expect(run.records.metrics.filter((m) => m.wall_s > kill.atS).length, log.join('\n')).toBeGreaterThan(0);
      expect(run.accounting.consumed).toBe(10 * 2);
    });
  }
});
