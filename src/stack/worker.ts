/**
 * The background worker of `rollflow dev up`: `rollflow worker` in its own
 * process. It is ready when Temporal lists it as a poller of the task queue.
 */
import { readdirSync, rmSync, statSync } from 'node:fs';
import { readJsonFile } from './files';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { taskQueuePollers } from '../client/run-handle';
import type { LoadedConfig } from '../configs';
import { cliEntry, logsDir, pidsDir, stateDir } from '../paths';
import { ensureStarted, isAlive, livePid, startDetached, stopProcess, waitUntil, type ManagedProcess } from './processes';

export function workerProcess({ config }: LoadedConfig): ManagedProcess {
  const name = `worker-${config.temporal.task_queue}`;
  return { name, pidFile: path.join(pidsDir(), `${name}.pid`), logFile: path.join(logsDir(), `${name}.log`), marker: 'cli/index.js worker' };
}

/**
 * The file a live worker rewrites every couple of seconds from its event loop (src/worker/liveness.ts):
 * how a supervisor or a Kubernetes exec probe tells a stopped or wedged worker from a working one. One file per
 * process: a second worker of the same queue on this host (more capacity, a test) must neither overwrite the beat
 * the supervisor judges its own worker by (it would kill it as hung) nor keep a hung one looking alive.
 */
export const workerAliveFile = ({ config }: LoadedConfig, pid = process.pid, state = stateDir()) => path.join(pidsDir(state), `worker-${config.temporal.task_queue}.${pid}.alive`);

/** The pids named by this config's alive files on this host, live or not. */
function beatingPids(loaded: LoadedConfig, state: string): number[] {
  const prefix = `worker-${loaded.config.temporal.task_queue}.`;
  let names: string[];
  try {
    names = readdirSync(pidsDir(state));
  } catch {
    return []; // no pids directory yet
  }
  return names.filter((n) => n.startsWith(prefix) && n.endsWith('.alive')).map((n) => Number(n.slice(prefix.length, -'.alive'.length))).filter((pid) => Number.isInteger(pid) && pid > 0);
}

/** The beats of this config's workers on this host whose processes still run (a dead one's file is left over). */
export const liveWorkerBeats = (loaded: LoadedConfig, state = stateDir()): WorkerBeat[] =>
  beatingPids(loaded, state).filter(isAlive).flatMap((pid) => readWorkerBeat(loaded, pid, state) ?? []);

/** Removes the alive files of this config's workers whose processes are gone (a killed worker cannot remove its own). */
export function removeDeadWorkerBeats(loaded: LoadedConfig, state = stateDir()): void {
  for (const pid of beatingPids(loaded, state).filter((p) => !isAlive(p))) rmSync(workerAliveFile(loaded, pid, state), { force: true });
}

/** Identities of the processes polling the config's workflow task queue. */
export const pollers = (client: Client, { config }: LoadedConfig) => taskQueuePollers(client, config.temporal.namespace, config.temporal.task_queue);

export async function startWorker(client: Client, loaded: LoadedConfig, configArgs: string[]): Promise<string> {
  const proc = workerProcess(loaded);
  // A rebuilt dist/ or other connection/engine/store settings mean the running worker is stale; run-level
  // settings (α, steps, …) travel in each run's plan, so they do not.
  const { temporal, engines } = loaded.config;
  const fingerprint = JSON.stringify({ temporal, engines, store: loaded.derived.sample_store, built: statSync(cliEntry).mtimeMs });
  const { pid, action } = await ensureStarted(proc, fingerprint, () => startDetached(proc, process.execPath, [cliEntry, 'worker', ...configArgs], process.env, fingerprint));
  if (action === 'already running') return `${proc.name}: already running (pid ${pid})`;
  await waitUntil(proc, async () => ((await pollers(client, loaded)).some((id) => id.startsWith(`${pid}@`)) ? true : undefined), 180_000);
  return `${proc.name}: ${action === 'restarted' ? 'restarted (code rebuilt or config changed)' : 'started'} (pid ${pid}) on task queue ${loaded.config.temporal.task_queue}`;
}

export async function workerStatus(client: Client | undefined, loaded: LoadedConfig): Promise<{ ok: boolean; line: string }> {
  const proc = workerProcess(loaded);
  const pid = livePid(proc);
  if (pid === undefined) return { ok: false, line: `${proc.name}: stopped` };
  const polling = client ? (await pollers(client, loaded).catch(() => [])).some((id) => id.startsWith(`${pid}@`)) : false;
  const beat = readWorkerBeat(loaded, pid);
  const waiting = beat?.waitingFor?.length ? `; waiting for ${beat.waitingFor.join(', ')}` : '';
  const hung = workerBeatProblem(loaded, pid);
  return { ok: polling && !hung, line: `${proc.name}: ${polling ? 'running' : 'not polling'} pid=${pid} task_queue=${loaded.config.temporal.task_queue}${hung ? `; ${hung}` : ''}${waiting}` };
}

export async function stopWorker(loaded: LoadedConfig): Promise<'stopped' | 'not running'> {
  const stopped = await stopProcess(workerProcess(loaded));
  removeDeadWorkerBeats(loaded); // a stopped worker's last beat must not read as a live one's
  return stopped;
}

/** What the worker writes to its alive file. */
export interface WorkerBeat {
  pid: number;
  /** When it was written (ms since the epoch). */
  at: number;
  /** How late the beat timer fired: a loop blocked by synchronous work shows here first. */
  loopLagMs: number;
  /** The SDK's Worker.getStatus(): run state and work in flight. */
  runState: string;
  activitiesInFlight: number;
  activationsInFlight: number;
  /** The engines its calls wait for because they cannot be reached (src/activities/engine-wait.ts). */
  waitingFor: string[];
}

/** A worker whose last beat is older than this is taken for hung by the supervisor (it beats every 2 s). */
export const WORKER_BEAT_STALE_MS = 10_000;

export const readWorkerBeat = (loaded: LoadedConfig, pid: number, state = stateDir()) => readJsonFile<WorkerBeat>(workerAliveFile(loaded, pid, state));

/**
 * undefined when the worker beat within `staleMs`; otherwise why it counts as hung. `pid`: the process that must
 * have beaten (the supervisor's). Without it (an exec probe in a container, where no pid file is kept), every live
 * worker of the config on this host must have beaten, and there must be one.
 */
export function workerBeatProblem(loaded: LoadedConfig, pid?: number, now = Date.now(), staleMs = WORKER_BEAT_STALE_MS): string | undefined {
  const stale = (beat: WorkerBeat) => {
    const age = now - beat.at;
    return age <= staleMs ? undefined : `no beat from pid ${beat.pid} for ${(age / 1000).toFixed(1)} s (stopped, or its event loop is blocked)`;
  };
  if (pid !== undefined) {
    const beat = readWorkerBeat(loaded, pid);
    return beat ? stale(beat) : `no readable alive file ${workerAliveFile(loaded, pid)} (it has not beaten yet)`;
  }
  const beats = liveWorkerBeats(loaded);
  if (beats.length === 0) return `no live worker of task queue ${loaded.config.temporal.task_queue} beats here (no alive file of a running process in ${pidsDir()})`;
  return beats.map(stale).find((problem) => problem !== undefined);
}
