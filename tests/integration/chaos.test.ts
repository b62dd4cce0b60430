// The chaos harness (src/chaos) on the embedded stack with sim engines: runs
// during which a process of each of the five kinds (worker, Temporal server,
// inference server, trainer, env server) gets SIGKILL, or SIGSTOP, mid-run, in
// a seeded rotation. Nothing restarts them but the stack's supervisor
// (`rollflow supervise`, started by dev up): the harness only injects. The
// runs' own records (metrics.jsonl, batch files, group workflows' results and
// histories) must keep every invariant. Longer schedules are in `make bench`
// (bench/results/chaos.md). Two more kinds hit files: the newest saved
// trainer state damaged before the trainer's SIGKILL (its recovery must pass
// it over), and the run directory's own small disk (a tmpfs the harness mounts,
// as root) filled for 30 s (the run must wait, and write nothing half). And
// the network: the inference server, then the trainer, cut off from the run
// for about 30 s each by the harness's proxy, then healed.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chaos, PROCESS_KINDS as FAULT_KINDS, type FaultSignal } from '../../src/chaos';
import { loadConfig, type LoadedConfig } from '../../src/configs';
import { down } from '../../src/stack';
import { workerProcess } from '../../src/stack/worker';
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

async function underFaults(signal: FaultSignal, runIdPrefix: string) {
  // A fault every 4 s ±25 % from the end of the first step, one of each kind in a seeded rotation: closer together than
  // the heartbeat timeout and than the supervisor's hang bound, so later faults land while earlier ones are recovering.
  const result = await chaos(loaded, [file], { schedule: { kinds: [...FAULT_KINDS], signals: [signal], everyS: 4, seed: 1, order: 'rotate' }, maxFaults: FAULT_KINDS.length, runIdPrefix, timeoutS: 900, faultFree: false, say: (l) => log.push(l) });
  const run = result.underFaults;
  expect(run.checks.filter((c) => !c.ok), log.join('\n')).toEqual([]);
  expect(run.checks.length).toBeGreaterThan(10);
  expect(run.faults.map((f) => f.skipped)).toEqual(FAULT_KINDS.map(() => undefined)); // each hit
  expect(new Set(run.faults.map((f) => f.kind))).toEqual(new Set(FAULT_KINDS));
  // Every fault landed mid-run: steps done before the first, steps after the last.
  expect(run.records.metrics.filter((m) => m.wall_s < run.faults[0]!.atS).length).toBeGreaterThan(0);
  expect(run.records.metrics.filter((m) => m.wall_s > run.faults.at(-1)!.atS).length, log.join('\n')).toBeGreaterThan(0);
  expect(run.accounting.consumed).toBe(STEPS * 2);
  return run;
}

describe('chaos: every kind of process hit mid-run, recovered by the supervisor alone', () => {
  it('SIGKILL of each kind: the supervisor starts each again, and the run keeps every invariant', { timeout: 1_200_000 }, async () => {
    const run = await underFaults('kill', 'killed');
    expect(run.faults.map((f) => f.back), log.join('\n')).toEqual(FAULT_KINDS.map(() => 'replaced'));
    for (const f of run.faults) expect(run.supervisor[f.process!]!.restarts, f.process).toBeGreaterThanOrEqual(1);
  });

  it('SIGSTOP of each kind: each hung process is noticed and replaced (or resumes), and the run keeps every invariant', { timeout: 1_200_000 }, async () => {
    const run = await underFaults('stop', 'stopped');
    expect(run.faults.every((f) => f.back !== undefined), log.join('\n')).toBe(true);
    // A stop lasts at least 30 s and the supervisor's bound is shorter: most come back replaced, after a kill for the hang.
    const replaced = run.faults.filter((f) => f.back === 'replaced');
    expect(replaced.length, log.join('\n')).toBeGreaterThan(0);
    for (const f of replaced) expect(run.supervisor[f.process!]!.hangKills, f.process).toBeGreaterThanOrEqual(1);
  });
});

describe('chaos: faults on the run\'s files', () => {
  const ok = (run: { checks: { ok: boolean; name: string; detail: string }[] }) => expect(run.checks.filter((c) => !c.ok), log.join('\n')).toEqual([]);

  it('corrupt: the newest saved trainer state damaged, then the trainer killed: its recovery passes that state over, and the run keeps every invariant', { timeout: 600_000 }, async () => {
    const result = await chaos(loaded, [file], { schedule: { kinds: ['corrupt'], everyS: 6, seed: 1, order: 'rotate' }, maxFaults: 1, runIdPrefix: 'corrupted', timeoutS: 500, faultFree: false, say: (l) => log.push(l) });
    const run = result.underFaults;
    ok(run);
    const [f] = run.faults;
    expect(f?.corrupted, log.join('\n')).toBeDefined();
    expect(f?.back).toBe('replaced');
    // recovery.jsonl (written by the worker's trainer recovery) names the damaged version, and the check on it ran
    expect(run.records.skippedStates?.map((x) => x.version)).toContain(f!.corrupted!.version);
    expect(run.records.skippedStates?.[0]?.reason).toMatch(/does not match its checksum/);
    expect(run.checks.find((c) => c.name.startsWith('trainer recovery'))?.ok).toBe(true);
    expect(run.records.metrics.filter((m) => m.wall_s > f!.atS).length).toBeGreaterThan(0);
  });

  it('disk: the run directory\'s disk full for 30 s mid-run: the run waits it out, leaves nothing half-written, and keeps every invariant', { timeout: 600_000 }, async () => {
    const workerLog = workerProcess(loaded).logFile;
    const diskFullBefore = () => readFileSync(workerLog, 'utf8').split('disk full:').length - 1;
    const before = (() => {
      try {
        return diskFullBefore();
      } catch {
        return 0;
      }
    })();
    // seed 120: the fault comes 3.5 s after the first step and holds the disk full for 30.1 s
    const result = await chaos(loaded, [file], { schedule: { kinds: ['disk'], everyS: 4, seed: 120, order: 'rotate' }, maxFaults: 1, diskMb: 64, runIdPrefix: 'diskfull', timeoutS: 500, faultFree: false, say: (l) => log.push(l) });
    const run = result.underFaults;
    ok(run);
    const [f] = run.faults;
    expect(f, log.join('\n')).toMatchObject({ kind: 'disk', diskFull: true, back: 'freed' });
    expect(run.records.tornFiles).toEqual([]);
    expect(run.records.final?.totals.failedGroups, 'a full disk fails no group: its writes wait').toBe(0);
    // The run met the full disk (the worker logged its writes refused as DiskFullError), and went on once it was freed.
    expect(diskFullBefore() - before, log.join('\n')).toBeGreaterThan(0);
    expect(run.records.metrics.filter((m) => m.wall_s > f!.atS + f!.backS!).length).toBeGreaterThan(0);
  });
});

describe('chaos: an engine cut off from the run', () => {
  let partitioned: LoadedConfig | undefined;
  afterAll(async () => {
    if (partitioned) await down(partitioned, (l) => log.push(l));
  });

  it('partition: the inference server, then the trainer, unreachable for about 30 s each: nothing is restarted, the run waits and keeps every invariant', { timeout: 900_000 }, async () => {
    const partitionFile = await writeSimRunConfig(server, 'chaos-partition', 16, { listen: true });
    partitioned = loadConfig(partitionFile);
    // seed 1690: the inference server cut 4.7 s after the first step for 31.5 s, the trainer at 7.3 s for 31.7 s
    const result = await chaos(partitioned, [partitionFile], { schedule: { kinds: ['partition'], everyS: 4, seed: 1690, order: 'rotate' }, maxFaults: 2, runIdPrefix: 'partitioned', timeoutS: 600, faultFree: false, say: (l) => log.push(l) });
    const run = result.underFaults;
    expect(run.checks.filter((c) => !c.ok), log.join('\n')).toEqual([]);
    expect(run.faults.map((f) => [f.process?.replace(/-\d+$/, ''), f.back])).toEqual([
      ['engine-inference', 'healed'],
      ['engine-trainer', 'healed'],
    ]);
    // A partition is not a dead process: the supervisor (which probes each engine where it listens) restarted none.
    for (const f of run.faults) expect(run.supervisor[f.process!], f.process).toMatchObject({ restarts: 0, hangKills: 0 });
    // Steps ran before the first cut and after the last heal, and the run did all of its steps once.
    const healedAtS = Math.max(...run.faults.map((f) => f.atS + f.backS!));
    expect(run.records.metrics.filter((m) => m.wall_s < run.faults[0]!.atS).length).toBeGreaterThan(0);
    expect(run.records.metrics.filter((m) => m.wall_s > healedAtS).length, log.join('\n')).toBeGreaterThan(0);
    expect(run.accounting.consumed).toBe(16 * 2);
    expect(run.records.final?.totals.failedGroups, 'an unreachable engine fails no group').toBe(0);
    // The cut was real: while the trainer was unreachable no train step finished, bar one whose answer crossed as it fell.
    const trainerCut = run.faults[1]!;
    const duringCut = run.records.metrics.filter((m) => m.wall_s > trainerCut.atS && m.wall_s < trainerCut.atS + trainerCut.backS!);
    expect(duringCut.length, JSON.stringify(run.records.metrics.map((m) => m.wall_s))).toBeLessThanOrEqual(1);
  });
});
