/**
 * One run under a fault schedule: the stack comes up (`rollflow dev up`,
 * which starts its supervisor), the run starts (`rollflow run`), and at each
 * scheduled time one process of the scheduled kind gets SIGKILL or SIGSTOP
 * (SIGCONT after its pause). Nothing here restarts anything: the supervisor
 * replaces what dies or hangs, and the harness only records when the part
 * was running again. Then the run's records are read back for the checker.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { WorkflowHandle } from '@temporalio/client';
import { startRun } from '../launch/run';
import { connectClient } from '../client/connect';
import { terminateRun } from '../client/terminate';
import type { LoadedConfig } from '../configs';
import { up } from '../stack';
import { isAlive, livePid } from '../stack/processes';
import { readSupervisorStatus, type PartStatus } from '../stack/supervisor';
import { FAULTS, type FaultKind, type FaultSignal } from './faults';
import type { RunRecords } from './invariants';
import { readMetrics, readRunRecords } from './records';
import { scheduledFault, type ScheduledFault, type ScheduleOptions } from './schedule';

export interface FaultRecord {
  index: number;
  kind: FaultKind;
  signal: FaultSignal;
  /** Seconds after the run started that the fault hit (the metrics records' wall_s clock). */
  atS: number;
  process?: string;
  pid?: number;
  /** A stop: the pause scheduled before SIGCONT. */
  stopS?: number;
  /** Seconds from the fault until the supervisor reported the part running again (a new process, or the stopped one resumed and answering). */
  backS?: number;
  /** How it came back: replaced (a new pid) or resumed (the stopped process, SIGCONT before the supervisor acted). */
  back?: 'replaced' | 'resumed';
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

/** Hits one process of the fault's kind; the returned promise settles once the part is back (or 10 minutes passed). */
async function inject(loaded: LoadedConfig, f: ScheduledFault, runStartMs: number, say: (line: string) => void): Promise<FaultRecord> {
  const live = FAULTS[f.kind](loaded).flatMap((p) => {
    const pid = livePid(p);
    return pid === undefined ? [] : [{ p, pid }];
  });
  const atS = () => (Date.now() - runStartMs) / 1000;
  if (live.length === 0) return { index: f.index, kind: f.kind, signal: f.signal, atS: atS(), skipped: 'no live process of this kind' };
  const { p, pid } = live[f.pick % live.length]!;
  const hitAt = Date.now();
  const record: FaultRecord = { index: f.index, kind: f.kind, signal: f.signal, atS: atS(), process: p.name, pid };
  if (f.signal === 'kill') {
    process.kill(pid, 'SIGKILL');
    for (const deadline = Date.now() + 30_000; isAlive(pid) && Date.now() < deadline; ) await sleep(20);
    say(`rollflow chaos: fault ${f.index} at ${record.atS.toFixed(1)} s: SIGKILL ${p.name} (pid ${pid})`);
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

/** Runs `runId` with the config, with faults on `schedule` (none: the fault-free run), at most `maxFaults` of them. */
export async function runUnderFaults(loaded: LoadedConfig, configArgs: string[], runId: string, schedule: ScheduleOptions | undefined, limits: { timeoutS: number; maxFaults: number }, say: (line: string) => void): Promise<RunUnderFaults> {
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
      faults.push(inject(loaded, next!, runStartMs, say));
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
