/**
 * One run under a fault schedule: the stack comes up (`rollflow dev up`,
 * which starts its supervisor), the run starts (`rollflow run`), and at each
 * scheduled time one process of the scheduled kind gets SIGKILL or SIGSTOP
 * (SIGCONT after its pause), the newest trainer state is damaged before the
 * trainer's SIGKILL (corrupt), or the run directory's disk is filled for a
 * while (disk). Nothing here restarts anything: the supervisor replaces what
 * dies or hangs, and the harness only records when the part was running
 * again. Then the run's records are read back for the checker.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { WorkflowHandle } from '@temporalio/client';
import { startRun } from '../launch/run';
import { connectClient } from '../client/connect';
import { terminateRun } from '../client/terminate';
import type { LoadedConfig } from '../configs';
import { runDataDir, trainerStateDir } from '../core';
import { up } from '../stack';
import { isAlive, livePid } from '../stack/processes';
import { readSupervisorStatus, type PartStatus } from '../stack/supervisor';
import { FAULTS, processKindOf, type FaultKind, type FaultSignal } from './faults';
import { corruptNewestState, diskIsFull, fillDisk, freeDisk, newestState, onTmpfs, type CorruptedState } from './file-faults';
import type { RunRecords } from './invariants';
import { readMetrics, readRunRecords } from './records';
import type { ProxiedEngine } from './partition-proxy';
import { scheduledFault, type ScheduledFault, type ScheduleOptions } from './schedule';

export interface FaultRecord {
  index: number;
  kind: FaultKind;
  /** Absent for a disk fault (no process is signalled). */
  signal?: FaultSignal;
  /** Seconds after the run started that the fault hit (the metrics records' wall_s clock). */
  atS: number;
  process?: string;
  pid?: number;
  /** A stop: the pause scheduled before SIGCONT. */
  stopS?: number;
  /** Seconds from the fault until the supervisor reported the part running again (a new process, or the stopped one resumed and answering). */
  backS?: number;
  /** How it came back: replaced (a new pid), resumed (the stopped process, SIGCONT before the supervisor acted), freed (the disk's filler removed), healed (the partition ended). */
  back?: 'replaced' | 'resumed' | 'freed' | 'healed';
  /** corrupt: the saved trainer state damaged (after the trainer's SIGKILL). */
  corrupted?: CorruptedState;
  /** disk: the filler's bytes, and whether a new one-page file then met ENOSPC. */
  filledBytes?: number;
  diskFull?: boolean;
  /** Why nothing was hit: no process of that kind was alive. */
  skipped?: string;
}

export interface RunUnderFaults {
  runId: string;
  faults: FaultRecord[];
  /** The supervisor's account of each part at the end: restarts, kills for hangs. */
  supervisor: Record<string, Pick<PartStatus, 'state' | 'restarts' | 'hangKills'>>;
  /** The run did not close within the timeout; it and its workflows were terminated. */
  timedOut: boolean;
  records: RunRecords;
}

/** Resolves when the supervisor reports `name` running with a status newer than `sinceMs`, or after `timeoutMs` (undefined). */
async function backRunning(loaded: LoadedConfig, name: string, sinceMs: number, timeoutMs: number): Promise<PartStatus | undefined> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await sleep(250)) {
    const part = readSupervisorStatus(loaded)?.parts[name];
    if (part?.state === 'running' && part.since > sinceMs) return part;
  }
  return undefined;
}

/** Fills the run directory's disk (the tmpfs chaos mounted there) for the fault's hold, then frees it; settles once freed. */
async function fillForAWhile(loaded: LoadedConfig, f: ScheduledFault, atS: () => number, say: (line: string) => void): Promise<FaultRecord> {
  const dir = loaded.derived.run_dir;
  if (!onTmpfs(dir)) throw new Error(`rollflow chaos: a disk fault fills the run directory's own small disk, and ${dir} is not on a tmpfs (rollflow chaos mounts one with --disk-mb)`);
  const hitAt = Date.now();
  const record: FaultRecord = { index: f.index, kind: f.kind, atS: atS(), stopS: f.stopS, filledBytes: fillDisk(dir, f.index), diskFull: diskIsFull(dir) };
  say(`rollflow chaos: fault ${f.index} at ${record.atS.toFixed(1)} s: disk of ${dir} filled (${((record.filledBytes ?? 0) / 2 ** 20).toFixed(1)} MiB, ${record.diskFull ? 'full' : 'NOT full'}) for ${f.stopS.toFixed(0)} s`);
  await sleep(f.stopS * 1000);
  freeDisk(dir, f.index);
  say(`rollflow chaos: fault ${f.index}: disk of ${dir} freed`);
  return { ...record, backS: (Date.now() - hitAt) / 1000, back: 'freed' };
}

/** Cuts one proxied engine off from the run for the fault's hold, then heals the partition; settles once healed. */
async function cutOffForAWhile(proxied: readonly ProxiedEngine[], f: ScheduledFault, atS: () => number, say: (line: string) => void): Promise<FaultRecord> {
  const base = { index: f.index, kind: f.kind };
  if (proxied.length === 0) return { ...base, atS: atS(), skipped: 'no engine behind a partition proxy' };
  const { name, proxy } = proxied[f.pick % proxied.length]!;
  const hitAt = Date.now();
  proxy.partition();
  const record: FaultRecord = { ...base, atS: atS(), process: name, stopS: f.stopS };
  say(`rollflow chaos: fault ${f.index} at ${record.atS.toFixed(1)} s: ${name} cut off from the run (proxy ${proxy.from} -> ${proxy.to}) for ${f.stopS.toFixed(0)} s`);
  await sleep(f.stopS * 1000);
  proxy.heal();
  say(`rollflow chaos: fault ${f.index}: partition of ${name} healed`);
  return { ...record, backS: (Date.now() - hitAt) / 1000, back: 'healed' };
}

/** Hits one process of the fault's kind (or the run's disk, or an engine's link); the returned promise settles once the part is back (or 10 minutes passed). */
async function inject(loaded: LoadedConfig, f: ScheduledFault, runId: string, runStartMs: number, proxied: readonly ProxiedEngine[], say: (line: string) => void): Promise<FaultRecord> {
  const atS = () => (Date.now() - runStartMs) / 1000;
  if (f.kind === 'partition') return cutOffForAWhile(proxied, f, atS, say);
  const kind = processKindOf(f.kind);
  if (kind === undefined) return fillForAWhile(loaded, f, atS, say);
  const stateDir = trainerStateDir(runDataDir(loaded.derived.run_dir, runId));
  const signal = f.signal ?? 'kill';
  const base = { index: f.index, kind: f.kind, signal };
  if (f.kind === 'corrupt' && !newestState(stateDir)) return { ...base, atS: atS(), skipped: `no saved trainer state in ${stateDir} yet` };
  const live = FAULTS[kind](loaded).flatMap((p) => {
    const pid = livePid(p);
    return pid === undefined ? [] : [{ p, pid }];
  });
  if (live.length === 0) return { ...base, atS: atS(), skipped: 'no live process of this kind' };
  const { p, pid } = live[f.pick % live.length]!;
  const hitAt = Date.now();
  const record: FaultRecord = { ...base, atS: atS(), process: p.name, pid };
  if (signal === 'kill') {
    process.kill(pid, 'SIGKILL');
    for (const deadline = Date.now() + 30_000; isAlive(pid) && Date.now() < deadline; ) await sleep(20);
    // Damaged only now: a dead trainer saves nothing newer, so this state is the one its recovery tries first.
    if (f.kind === 'corrupt') record.corrupted = corruptNewestState(stateDir);
    const damaged = record.corrupted ? `, after flipping a byte of saved state v${record.corrupted.version} (${record.corrupted.file})` : '';
    say(`rollflow chaos: fault ${f.index} at ${record.atS.toFixed(1)} s: SIGKILL ${p.name} (pid ${pid})${damaged}`);
  } else {
    process.kill(pid, 'SIGSTOP');
    record.stopS = f.stopS;
    say(`rollflow chaos: fault ${f.index} at ${record.atS.toFixed(1)} s: SIGSTOP ${p.name} (pid ${pid}) for ${f.stopS.toFixed(0)} s`);
    // SIGCONT goes to the same process only: a replaced one's pid may be reused by then.
    setTimeout(() => {
      if (livePid(p) === pid) process.kill(pid, 'SIGCONT');
    }, f.stopS * 1000).unref();
  }
  const back = await backRunning(loaded, p.name, hitAt, 600_000);
  if (back) {
    record.backS = (back.since - hitAt) / 1000;
    record.back = back.pid === pid ? 'resumed' : 'replaced';
  }
  return record;
}

/** True once the run (its newest execution) has closed; false at `untilMs`. Temporal being down counts as not closed. */
async function closedBy(handle: WorkflowHandle, untilMs: number): Promise<boolean> {
  for (;;) {
    const status = await handle
      .describe()
      .then((d) => d.status.name)
      .catch(() => 'UNKNOWN');
    if (status !== 'RUNNING' && status !== 'UNKNOWN') return true;
    if (Date.now() >= untilMs) return false;
    await sleep(Math.min(500, Math.max(0, untilMs - Date.now())));
  }
}

/** The first step's wall_s once its metrics record is written (0 if the run closes or the deadline passes first). */
async function firstStepWallS(loaded: LoadedConfig, runId: string, handle: WorkflowHandle, deadlineMs: number): Promise<number> {
  for (;;) {
    const first = readMetrics(loaded, runId).find((m) => m.step === 0);
    if (first) return first.wall_s;
    if (await closedBy(handle, Math.min(deadlineMs, Date.now() + 500))) return 0;
    if (Date.now() >= deadlineMs) return 0;
  }
}

/**
 * Runs `runId` with the config, with faults on `schedule` (none: the fault-free run), at most `maxFaults` of them;
 * a partition cuts off one of the `proxied` engines.
 */
export async function runUnderFaults(loaded: LoadedConfig, configArgs: string[], runId: string, schedule: ScheduleOptions | undefined, limits: { timeoutS: number; maxFaults: number; proxied?: readonly ProxiedEngine[] }, say: (line: string) => void): Promise<RunUnderFaults> {
  const { timeoutS } = limits;
  await up(loaded, configArgs, say); // `rollflow run` brings up only an embedded stack; engines and worker beside a cluster too
  await startRun(loaded, configArgs, { runId }, say, say); // refuses a run id that has records already (client/run-id.ts)
  const client = await connectClient(loaded.config);
  try {
    const handle = client.workflow.getHandle(runId);
    const runStartMs = (await handle.describe()).startTime.getTime();
    const deadline = runStartMs + timeoutS * 1000;
    const faults: Promise<FaultRecord>[] = [];
    let timedOut = false;
    // The schedule's clock starts when the first step is done, so every fault lands mid-run, with a trained
    // version and groups out (start-up, the first weights and the first batch take a varying while on a loaded machine).
    const scheduleFromMs = schedule ? runStartMs + (await firstStepWallS(loaded, runId, handle, deadline)) * 1000 : runStartMs;
    for (let i = 0; ; i++) {
      const next = schedule && i < limits.maxFaults ? scheduledFault(schedule, i) : undefined;
      if (await closedBy(handle, Math.min(deadline, next ? scheduleFromMs + next.atS * 1000 : Infinity))) break;
      if (Date.now() >= deadline) {
        timedOut = true;
        say(`rollflow chaos: ${runId} did not finish within ${timeoutS} s; terminating it`);
        await terminateRun(client, runId, `rollflow chaos: not finished within ${timeoutS} s`);
        break;
      }
      // Not awaited: the next fault may come before this part is back (faults closer together than any timeout).
      faults.push(inject(loaded, next!, runId, runStartMs, limits.proxied ?? [], say));
    }
    const records = await readRunRecords(client, loaded, runId, runStartMs);
    // A failed run leaves its ABANDONed groups generating: end them once recorded, so the next run has the stack to itself.
    if (records.outcome !== 'COMPLETED') await terminateRun(client, runId, `rollflow chaos: the run ended ${records.outcome}`);
    const supervisor = Object.fromEntries(Object.entries(readSupervisorStatus(loaded)?.parts ?? {}).map(([name, p]) => [name, { state: p.state, restarts: p.restarts, hangKills: p.hangKills }]));
    return { runId, faults: await Promise.all(faults), supervisor, timedOut, records };
  } finally {
    await client.connection.close();
  }
}
