/**
 * One run under a fault schedule: the stack comes up (`rollflow dev up`), the
 * run starts (`rollflow run`), and at each scheduled time one process of the
 * scheduled kind gets SIGKILL and is restarted as an operator would, until
 * the run closes. Then its records are read back for the invariant checker.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { WorkflowHandle } from '@temporalio/client';
import { startRun } from '../launch/run';
import { connectClient } from '../client/connect';
import { terminateRun } from '../client/terminate';
import type { LoadedConfig } from '../configs';
import { up } from '../stack';
import { isAlive, livePid } from '../stack/processes';
import { FAULTS, type FaultKind } from './faults';
import type { RunRecords } from './invariants';
import { readMetrics, readRunRecords } from './records';
import { scheduledKill, type ScheduledKill, type ScheduleOptions } from './schedule';

export interface KillRecord {
  index: number;
  kind: FaultKind;
  /** Seconds after the run started that the process died (the metrics records' wall_s clock). */
  atS: number;
  process?: string;
  pid?: number;
  /** Seconds the restart (`dev up`) took. */
  restartS?: number;
  restartError?: string;
  /** Why nothing was killed: no process of that kind was alive. */
  skipped?: string;
}

export interface RunUnderFaults {
  runId: string;
  kills: KillRecord[];
  /** The run did not close within the timeout; it and its workflows were terminated. */
  timedOut: boolean;
  records: RunRecords;
}

async function killAndRestart(loaded: LoadedConfig, configArgs: string[], k: ScheduledKill, runStartMs: number, say: (line: string) => void): Promise<KillRecord> {
  const fault = FAULTS[k.kind];
  const live = fault.processes(loaded).flatMap((p) => {
    const pid = livePid(p);
    return pid === undefined ? [] : [{ p, pid }];
  });
  const atS = () => (Date.now() - runStartMs) / 1000;
  if (live.length === 0) return { index: k.index, kind: k.kind, atS: atS(), skipped: 'no live process of this kind' };
  const { p, pid } = live[k.pick % live.length]!;
  process.kill(pid, 'SIGKILL');
  for (const deadline = Date.now() + 30_000; isAlive(pid) && Date.now() < deadline; ) await sleep(20);
  const killedAt = Date.now();
  const kill: KillRecord = { index: k.index, kind: k.kind, atS: atS(), process: p.name, pid };
  say(`rollflow chaos: kill ${k.index} at ${kill.atS.toFixed(1)} s: SIGKILL ${p.name} (pid ${pid}); restarting`);
  try {
    await fault.restart(loaded, configArgs, say);
  } catch (err) {
    kill.restartError = (err as Error).message;
    say(`rollflow chaos: restart after kill ${k.index} failed: ${kill.restartError}`);
  }
  kill.restartS = (Date.now() - killedAt) / 1000;
  return kill;
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

/** Runs `runId` with the config, killing on `schedule` (none: the fault-free run), at most `maxKills` times. */
export async function runUnderFaults(loaded: LoadedConfig, configArgs: string[], runId: string, schedule: ScheduleOptions | undefined, limits: { timeoutS: number; maxKills: number }, say: (line: string) => void): Promise<RunUnderFaults> {
  const { timeoutS } = limits;
  await up(loaded, configArgs, say); // `rollflow run` brings up only an embedded stack; engines and worker beside a cluster too
  await startRun(loaded, configArgs, { runId }, say, say); // refuses a run id that has records already (client/run-id.ts)
  const client = await connectClient(loaded.config);
  try {
    const handle = client.workflow.getHandle(runId);
    const runStartMs = (await handle.describe()).startTime.getTime();
    const deadline = runStartMs + timeoutS * 1000;
    const kills: KillRecord[] = [];
    let timedOut = false;
    // The schedule's clock starts when the first step is done, so every kill lands mid-run, with a trained
    // version and groups out (start-up, the first weights and the first batch take a varying while on a loaded machine).
    const scheduleFromMs = schedule ? runStartMs + (await firstStepWallS(loaded, runId, handle, deadline)) * 1000 : runStartMs;
    for (let i = 0; ; i++) {
      const next = schedule && i < limits.maxKills ? scheduledKill(schedule, i) : undefined;
      if (await closedBy(handle, Math.min(deadline, next ? scheduleFromMs + next.atS * 1000 : Infinity))) break;
      if (Date.now() >= deadline) {
        timedOut = true;
        say(`rollflow chaos: ${runId} did not finish within ${timeoutS} s; terminating it`);
        await terminateRun(client, runId, `rollflow chaos: not finished within ${timeoutS} s`);
        break;
      }
      kills.push(await killAndRestart(loaded, configArgs, next!, runStartMs, say));
    }
    const records = await readRunRecords(client, loaded, runId, runStartMs);
    // A failed run leaves its ABANDONed groups generating: end them once recorded, so the next run has the stack to itself.
    if (records.outcome !== 'COMPLETED') await terminateRun(client, runId, `rollflow chaos: the run ended ${records.outcome}`);
    return { runId, kills, timedOut, records };
  } finally {
    await client.connection.close();
  }
}
