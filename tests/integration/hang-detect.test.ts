// A live process that stops making progress, in a run: the sim inference
// server models a deadlocked backend after 400 decode steps of each life, the
// sim trainer after 6 train steps of each life (sim.deadlock_after_steps,
// sim_deadlock_after_steps). Each goes on answering, so only liveness from
// progress can see it: its /health turns 503 `stalled` after stall_after_s
// (15 s here), the supervisor kills it after 10 s of failing probes and starts
// it again, and the run (the inference call cut by its idle guard once the
// keep-alives stop; the train step retried on the new trainer, brought back by
// its saved states) completes with every invariant of the chaos checker.
// No fault is injected by the harness: the engines hang by themselves.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { chaos } from '../../src/chaos';
import { loadConfig, type LoadedConfig } from '../../src/configs';
import { down } from '../../src/stack';
import { launchedEngines } from '../../src/stack/engines';
import { readSupervisorStatus } from '../../src/stack/supervisor';
import { ROOT, TestDevServer } from './helpers/dev-server';
import { writeSimRunConfig } from './helpers/sim-run-config';

const STEPS = 16;
let server: TestDevServer;
let file: string;
let loaded: LoadedConfig;
const log: string[] = [];

beforeAll(async () => {
  expect(readdirSync(path.join(ROOT, 'dist')).length, 'run `make build` first').toBeGreaterThan(0);
  server = await TestDevServer.create();
  process.env.ROLLFLOW_STATE = server.stateDir;
  file = await writeSimRunConfig(server, 'hang-test', STEPS);
  const raw = parse(readFileSync(file, 'utf8')) as { trainer_state_save_steps?: number; engines: { inference: { options: { sim: Record<string, unknown>; stall_after_s?: number } }[]; trainer: { options: Record<string, unknown> } } };
  // 15 s, not 5: on a loaded 2-core machine a healthy engine's call (a trainer's start-up) may go 5 s without moving
  // its counters, and a false stall kills each new life before it has worked. That is our reading of a CI run that did
  // not finish in 800 s with 5 s; a failure now prints the supervisor's view of each part.
  Object.assign(raw.engines.inference[0]!.options, { stall_after_s: 15 });
  Object.assign(raw.engines.inference[0]!.options.sim, { deadlock_after_steps: 400 });
  Object.assign(raw.engines.trainer.options, { stall_after_s: 15, sim_deadlock_after_steps: 6 });
  raw.trainer_state_save_steps = 2; // a new trainer replays at most one stored batch, fewer than its 6 steps a life
  writeFileSync(file, stringify(raw));
  loaded = loadConfig(file);
});

afterAll(async () => {
  if (loaded) await down(loaded, (l) => log.push(l));
});

describe('a live engine that stops making progress', () => {
  it('a deadlocked inference backend and a trainer hung mid-step are each seen stalled, killed and replaced by the supervisor, and the run completes with every invariant', { timeout: 900_000 }, async () => {
    const result = await chaos(loaded, [file], { schedule: { kinds: ['worker'], everyS: 60, seed: 0, order: 'rotate' }, maxFaults: 0, runIdPrefix: 'hangs', timeoutS: 800, faultFree: false, say: (l) => log.push(l) });
    const run = result.underFaults;
    expect(run.faults).toEqual([]);
    // First the supervisor's view of each part (its reason included), then the run's last lines: a run that did not
    // finish says which part was down and why within the few lines of a message that reach CI's summary.
    const parts = Object.entries(readSupervisorStatus(loaded)?.parts ?? {}).map(([name, p]) => `${name} ${p.state} restarts ${p.restarts} hangKills ${p.hangKills}${p.reason ? ` (${p.reason})` : ''}`);
    expect(run.checks.filter((c) => !c.ok), `supervisor: ${parts.join('; ')}\nlast lines:\n${log.slice(-8).join('\n')}`).toEqual([]);
    expect(run.accounting.consumed).toBe(STEPS * 2);
    for (const role of ['inference', 'trainer'] as const) {
      const e = launchedEngines(loaded).find((x) => x.role === role)!;
      const part = run.supervisor[e.process.name];
      // Killed for the hang, never found dead: the process answered all along, only its progress stopped.
      expect(part?.hangKills, `${role}: ${JSON.stringify(part)}\n${log.join('\n')}`).toBeGreaterThanOrEqual(1);
      expect(part!.restarts).toBe(part!.hangKills);
      const engineLog = readFileSync(e.process.logFile, 'utf8');
      expect(engineLog.split('sim deadlock:').length - 1, role).toBeGreaterThanOrEqual(part!.hangKills);
    }
    expect(run.records.final?.totals.failedGroups, 'a hung engine fails no group').toBe(0);
  });
});
